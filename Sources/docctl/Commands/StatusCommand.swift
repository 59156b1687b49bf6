import ArgumentParser
import DocCache
import DocModel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `docctl status`.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Online or offline, pending and failed writes, the last sync error, the cache's size.",
        discussion: """
            Example:
              docctl status --tenant acme --uid alice
              server     http://127.0.0.1:8080 (online)
              pending    2 batches
              sync       offline, 2 pending, last synced 2026-11-25T09:12:03.000000Z
              failed     1 write
              last error none
              cache      ~/.docctl/cache/127.0.0.1_8080/acme/alice (1.2 MB)

            Online means the server answered its health check within 3 seconds.
            """
    )

    @OptionGroup var client: ClientOptions

    func run() async throws {
        let online = await Self.healthy(client.serverURL)
        try await ClientSession.with(client) { session in
            let pending = await session.store.pendingWriteCount
            let pendingWrites = (try? await session.store.pendingWrites()) ?? []
            let failed = ((try? await session.store.failedWrites()) ?? []).count
            let sync = await session.store.syncStatus
            let lastError = await session.store.lastSyncError ?? pendingWrites.compactMap(\.lastError).last
            let identity = try client.identity()
            let directory = client.cacheRoot
            let bytes = Self.size(of: directory)
            if client.json {
                Output.line(.object([
                    ("server", .string(client.serverURL)), ("online", .bool(online)),
                    ("tenant", .string(identity.tenant)), ("uid", .string(identity.uid)),
                    ("pendingWrites", .int(Int64(pending))),
                    ("sync", .object([
                        ("phase", .string(sync.phase.rawValue)),
                        ("completedBatches", .int(Int64(sync.completedBatches))),
                        ("totalBatches", .int(Int64(sync.totalBatches))),
                        ("lastSyncedAt", sync.lastSyncedAt.map { .string($0.rfc3339) } ?? .null),
                    ])),
                    ("failedWrites", .int(Int64(failed))),
                    ("lastSyncError", lastError.map { Rendering.error($0) } ?? .null),
                    ("cache", .string(directory)), ("cacheBytes", .int(bytes)),
                ]))
            } else {
                Output.line("server     \(client.serverURL) (\(online ? "online" : "offline"))")
                Output.line("user       \(identity.uid) in \(identity.tenant)")
                Output.line("pending    \(pending) batch\(pending == 1 ? "" : "es")")
                Output.line("sync       \(sync)")
                Output.line("failed     \(failed) write\(failed == 1 ? "" : "s")")
                Output.line("last error \(lastError.map { "\($0)" } ?? "none")")
                Output.line("cache      \(directory) (\(ByteCountFormatter.string(fromByteCount: bytes, countStyle: .file)))")
            }
        }
    }

    /// Whether `GET /health` answers 200 within 3 seconds.
    static func healthy(_ server: String) async -> Bool {
        guard let url = URL(string: server + "/health") else { return false }
        var request = URLRequest(url: url)
        request.timeoutInterval = 3
        guard let (_, response) = try? await URLSession.shared.data(for: request) else { return false }
        return (response as? HTTPURLResponse)?.statusCode == 200
    }

    /// The bytes of every file under `directory`.
    static func size(of directory: String) -> Int64 {
        guard let files = FileManager.default.enumerator(atPath: directory) else { return 0 }
        var total: Int64 = 0
        for case let file as String in files {
            let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + file)
            if attributes?[.type] as? FileAttributeType == .typeRegular { total += (attributes?[.size] as? Int64) ?? 0 }
        }
        return total
    }
}
