import Crypto
import DocModel
import DocProtocol
import DocServer
import DocTestSupport
import Foundation

/// The hex SHA-256 of `bytes` (an attachment's id text).
func sha256Hex(_ bytes: some DataProtocol) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

/// Random bytes from a seed (a "photo" for the attachment tests).
func randomPhoto(seed: UInt64, bytes: Int) -> [UInt8] {
    var generator = SplitMix64(seed: seed)
    var out = [UInt8](repeating: 0, count: bytes)
    var i = 0
    while i < bytes {
        var word = generator.next()
        for _ in 0..<8 where i < bytes {
            out[i] = UInt8(truncatingIfNeeded: word)
            word >>= 8
            i += 1
        }
    }
    return out
}

/// What a server's `FileBlobStore` holds for one tenant, read from its directory the way the
/// server reads it (``FileBlobStore`` on the same root) and byte by byte from the disk: complete
/// attachments with their metadata and the SHA-256 of the stored bytes, partial uploads, and
/// anything else lying around. Layout: docs/attachments.md, "The blob store".
struct BlobStoreSnapshot: Sendable, CustomStringConvertible {
    struct Complete: Sendable {
        var metadata: AttachmentMetadata
        /// The SHA-256 of the file under the attachment's final name, computed here.
        var storedSHA256: String
        var storedSize: Int64
    }

    /// Complete attachments (metadata present), by id.
    var complete: [AttachmentID: Complete] = [:]
    /// Every file in the tenant's `partial/` folder (an upload in progress, or a leftover).
    var partialFiles: [String] = []
    /// Files in the shard folders that are neither a complete attachment's bytes nor its
    /// metadata (bytes without metadata, temporary files, …).
    var strayFiles: [String] = []
    /// `FileBlobStore.list(tenant:)`: what a collector would see.
    var listing: [BlobListing] = []

    var description: String {
        let ids = complete.keys.map { String($0.hex.prefix(12)) }.sorted()
        return "complete \(ids), partial files \(partialFiles), stray files \(strayFiles), listing \(listing.count) entries"
    }

    /// Reads the blob store under `root` (a `LiveServer`'s `dataDirectory + "/attachments"`)
    /// for `tenant` (a plain lower-case name: its folder is the name itself).
    static func read(root: String, tenant: String) async throws -> BlobStoreSnapshot {
        let store = try FileBlobStore(root: root)
        let tenantID = try TenantID(tenant)
        var snapshot = BlobStoreSnapshot()
        snapshot.listing = try await store.list(tenant: tenantID)
        let tenantDirectory = root + "/" + tenant
        let fm = FileManager.default
        let folders = ((try? fm.contentsOfDirectory(atPath: tenantDirectory)) ?? []).sorted()
        for folder in folders {
            let path = tenantDirectory + "/" + folder
            let names = ((try? fm.contentsOfDirectory(atPath: path)) ?? []).sorted()
            if folder == "partial" {
                snapshot.partialFiles = names.map { name in
                    let size = (try? fm.attributesOfItem(atPath: path + "/" + name)[.size] as? Int) ?? nil
                    return size.map { "\(name) (\($0) bytes)" } ?? name
                }
                continue
            }
            for name in names {
                if name.hasSuffix(".json"), let id = try? AttachmentID(String(name.dropLast(5))),
                   names.contains(id.hex) {
                    continue   // checked with its bytes below
                }
                guard let id = try? AttachmentID(name), names.contains(name + ".json") else {
                    snapshot.strayFiles.append(folder + "/" + name)
                    continue
                }
                guard let metadata = try await store.metadata(id, tenant: tenantID) else {
                    snapshot.strayFiles.append(folder + "/" + name + " (metadata unreadable)")
                    continue
                }
                let bytes = try Data(contentsOf: URL(fileURLWithPath: path + "/" + name))
                snapshot.complete[id] = Complete(metadata: metadata, storedSHA256: sha256Hex(bytes), storedSize: Int64(bytes.count))
            }
        }
        return snapshot
    }

    /// Whether `id` is complete in the store now (its metadata file, the commit point, exists).
    static func isComplete(_ id: AttachmentID, root: String, tenant: String) async throws -> Bool {
        try await FileBlobStore(root: root).metadata(id, tenant: TenantID(tenant)) != nil
    }
}

/// A document as the server has it, read over a fresh raw WebSocket connection (no client
/// cache in between), with its versions (``ServerReads`` answers only the fields).
enum ServerDocument {
    /// The document at `path`, or nil when the server has none.
    static func read(_ path: String, url: String, token: String) async throws -> Document? {
        let socket = RawSocket(url: url)
        defer { Task { await socket.close() } }
        guard case .welcome? = await socket.hello(token: token) else { throw DocError(.unavailable, "no welcome from \(url)") }
        socket.send(.addTarget(.init(targetID: 2, target: try DocModel.Query(document: DocumentKey(path)).toTarget())))
        var document: Document?
        while let message = await socket.next() {
            switch message {
            case .documentChange(let change): document = change.document
            case .targetChange(let change) where change.state == .current: return document
            case .targetChange(let change) where change.state == .removed:
                throw change.cause ?? DocError(.unknown, "the read's target was removed")
            default: continue
            }
        }
        throw DocError(.unavailable, "the connection to \(url) closed during a read")
    }
}
