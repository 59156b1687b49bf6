import DocCache
import DocModel
import DocServer
import Foundation

/// `sync-offline-10k`: a store opened with an endpoint to a loopback server but with its
/// network disabled makes `writes` writes (distinct documents, app-like data); each sample is
/// the time from `enableNetwork()` until `waitForPendingWrites()` returns (every batch
/// acknowledged). Each run has a fresh store and a fresh server. After each run the server's
/// store is read directly: every document must be there, and its change log must hold exactly
/// one change per write (a batch applied twice would add a second one); otherwise the
/// scenario fails.
func syncOffline(writes: Int, runs: Int, store: @Sendable () async throws -> BenchStore = { .leveldb }) async throws -> Result {
    var samples: [Double] = []
    for run in 0..<runs {
        let server = try await BenchServer(store: try await store())
        let directory = temporaryDirectory("sync-offline")
        do {
            let store = try await DocumentStore.open(
                directory: directory, tenant: "bench", user: "field-\(run)", server: try server.endpoint(uid: "field-\(run)"))
            try await store.disableNetwork()
            let items = try store.collection("items")
            for i in 0..<writes {
                _ = try await items.document(itemID(i)).setData(sampleData(i))
            }
            let pending = await store.pendingWriteCount
            guard pending == writes else {
                throw DocError(.internal, "sync-offline: \(pending) writes pending before the reconnect, expected \(writes)")
            }
            let tenant = try await server.store.tenant(TenantID("bench"))
            let before = try await tenant.state().lastVersion

            let start = ContinuousClock.now
            try await store.enableNetwork()
            try await store.waitForPendingWrites()
            samples.append(micros(start.duration(to: .now)))

            let left = await store.pendingWriteCount
            await store.close()
            guard left == 0 else { throw DocError(.internal, "sync-offline: \(left) writes still pending after waitForPendingWrites") }
            try await verifyArrivedExactlyOnce(tenant, writes: writes, after: before)
        } catch {
            await server.stop()
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        await server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
    return Result(samples: samples, peer: nil, peerSamples: nil)
}

private func itemID(_ i: Int) -> String { "item\(String(format: "%07d", i))" }

/// Every written document is on the server with its data, and the change log since `version`
/// has exactly one change per document.
private func verifyArrivedExactlyOnce(_ tenant: any TenantStore, writes: Int, after version: SnapshotVersion) async throws {
    let target = try DocModel.Query(collection: "items").toTarget()
    let stored = try await tenant.query(target, limit: nil).documents
    guard stored.count == writes else {
        throw DocError(.dataLoss, "sync-offline: the server has \(stored.count) documents in items, expected \(writes)")
    }
    for document in stored {
        guard case .string(let title)? = document.data["title"], title == "Item number \(Int(document.key.documentID.dropFirst(4))!)" else {
            throw DocError(.dataLoss, "sync-offline: \(document.key) arrived with other data")
        }
    }
    guard case .complete(let changes, _) = try await tenant.changes(after: version, maxEntries: writes * 2 + 10) else {
        throw DocError(.internal, "sync-offline: the server's change log cannot answer")
    }
    var perDocument: [DocumentKey: Int] = [:]
    for change in changes { perDocument[change.key, default: 0] += 1 }
    let twice = perDocument.filter { $0.value != 1 }
    guard perDocument.count == writes, twice.isEmpty else {
        throw DocError(.dataLoss, "sync-offline: \(perDocument.count) documents changed on the server, \(twice.count) of them more than once")
    }
}
