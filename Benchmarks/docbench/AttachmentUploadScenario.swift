import Crypto
import DocCache
import DocModel
import DocServer
import DocServerPostgres
import DocTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `attachment-upload`: `count` attachments of `size` bytes each (random, distinct) added to
/// a store while its network is disabled, then uploaded by the store to a loopback server
/// once the network is enabled. Each sample is one attachment's share of the upload: the
/// time between consecutive attachments turning `uploaded` (the first from
/// `enableNetwork()`).
///
/// Peer: the same number of other random attachments of the same size, each sent as one plain
/// `PUT /attachments/{id}` of the whole body through `URLSession` to the same server (no
/// status request, no store, no resuming). Afterwards every attachment of both sides must be
/// complete in the server's blob store; otherwise the scenario fails. Throughputs (MB/s over
/// the whole run) are reported as `attachment-upload-throughput` and
/// `attachment-upload-peer-throughput`.
///
/// With `store` a PostgreSQL database, the server runs on it and keeps the attachments in it
/// (``PostgresBlobStore``, through a second connection pool to the database, as another
/// instance's would be).
func attachmentUpload(count: Int, size: Int = 1 << 20, store kind: BenchStore = .leveldb) async throws -> Result {
    let blobDirectory = temporaryDirectory("blobs")
    defer { try? FileManager.default.removeItem(atPath: blobDirectory) }
    let blobs: any BlobStore
    var blobHost: PostgresServerStore?
    switch kind {
    case .leveldb:
        blobs = try FileBlobStore(root: blobDirectory)
    case .postgres(let url):
        let host = try await PostgresServerStore.connect(url: url)
        blobHost = host
        blobs = try PostgresBlobStore(store: host)
    }
    defer { if let blobHost { Task { await blobHost.close() } } }
    var configuration = ServerConfiguration()
    configuration.attachments = AttachmentSettings(store: blobs, policy: AllowAllAttachmentPolicy())
    let server = try await BenchServer(store: kind, configuration: configuration)
    let directory = temporaryDirectory("attachment-upload")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    // Seeded once from the system: the system generator asks the kernel for every 8 bytes.
    var generator = SplitMix64(seed: UInt64.random(in: 0...UInt64.max))
    func randomBytes() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        for i in stride(from: 0, to: size, by: 8) {
            withUnsafeBytes(of: generator.next() as UInt64) { word in
                for j in 0..<min(8, size - i) { bytes[i + j] = word[j] }
            }
        }
        return bytes
    }

    do {
        // Peer first warms the server's connection handling; its own samples follow the store's.
        let session = URLSession(configuration: .ephemeral)
        let token = try await server.token(uid: "peer")
        for _ in 0..<3 { _ = try await plainPut(randomBytes(), to: server.url, token: token, session: session) }

        let store = try await DocumentStore.open(directory: directory, tenant: "bench", user: "field",
                                                 server: try server.endpoint(uid: "field"))
        try await store.disableNetwork()
        var ids: [AttachmentID] = []
        for _ in 0..<count { ids.append(try await store.attachments.add(bytes: randomBytes(), contentType: "image/jpeg").id) }

        let updates = store.attachments.updates()
        let start = ContinuousClock.now
        try await store.enableNetwork()
        var finished: [ContinuousClock.Instant] = []
        for await attachments in updates {
            let uploaded = attachments.filter { $0.state == .uploaded }.count
            while finished.count < uploaded { finished.append(.now) }
            if let failed = attachments.first(where: { if case .failed = $0.state { return true } else { return false } }) {
                throw DocError(.internal, "attachment-upload: \(failed.id) failed: \(failed.state)")
            }
            if uploaded == count { break }
        }
        let elapsed = start.duration(to: finished.last ?? .now)
        var samples: [Double] = []
        var previous = start
        for instant in finished {
            samples.append(micros(previous.duration(to: instant)))
            previous = instant
        }
        await store.close()

        var peerSamples: [Double] = []
        var peerIDs: [AttachmentID] = []
        let peerBodies = (0..<count).map { _ in randomBytes() }
        let peerStart = ContinuousClock.now
        for bytes in peerBodies {
            let clock = ContinuousClock.now
            peerIDs.append(try await plainPut(bytes, to: server.url, token: token, session: session))
            peerSamples.append(micros(clock.duration(to: .now)))
        }
        let peerElapsed = peerStart.duration(to: .now)

        for id in ids + peerIDs {
            guard let metadata = try await blobs.metadata(id, tenant: TenantID("bench")), metadata.size == Int64(size) else {
                throw DocError(.dataLoss, "attachment-upload: \(id) is not complete on the server")
            }
        }
        await server.stop()
        let megabytes = Double(count * size) / 1_000_000
        return Result(samples: samples, peer: "http-put", peerSamples: peerSamples, figures: [
            Figure(scenario: "attachment-upload-throughput", unit: "MB/s", value: megabytes / (micros(elapsed) / 1e6)),
            Figure(scenario: "attachment-upload-peer-throughput", unit: "MB/s", value: megabytes / (micros(peerElapsed) / 1e6)),
        ])
    } catch {
        await server.stop()
        throw error
    }
}

/// One whole-body `PUT /attachments/{id}`; returns the id.
private func plainPut(_ bytes: [UInt8], to url: String, token: String, session: URLSession) async throws -> AttachmentID {
    let id = AttachmentID(digest: SHA256.hash(data: bytes))
    var request = URLRequest(url: URL(string: "\(url)/attachments/\(id.hex)")!)
    request.httpMethod = "PUT"
    request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization")
    request.setValue("image/jpeg", forHTTPHeaderField: "Content-Type")
    request.setValue(String(bytes.count), forHTTPHeaderField: "Upload-Length")
    request.setValue("0", forHTTPHeaderField: "Upload-Offset")
    request.httpBody = Data(bytes)
    let (_, response) = try await session.data(for: request)
    guard let status = (response as? HTTPURLResponse)?.statusCode, status == 201 else {
        throw DocError(.internal, "attachment-upload: the plain PUT of \(id) was answered \(String(describing: (response as? HTTPURLResponse)?.statusCode))")
    }
    return id
}
