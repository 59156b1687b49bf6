import DocCache
import DocModel
import DocTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing

/// Issue 4's proof of "exactly once": a TCP proxy between a DocCache client and the real
/// server cuts the connection right after the server sent a `writeResult` or `writeResults`
/// — the server has committed the batches, the client never hears of it — for about half of
/// the answers. The
/// client reconnects and sends the same `(clientId, batchId)` again; the server answers with
/// the stored result and applies nothing. 1,000 increments must leave the counter at 1,000.
@Suite("Exactly once through a cutting proxy", .serialized)
struct ExactlyOnceProxyTests {
    @Test func aThousandIncrementsThroughCutConnectionsCountExactlyAThousand() async throws {
        try await thousandIncrements(pruningOutcomes: false)
    }

    /// Increments through the cutting proxy while the server prunes every outcome but each
    /// client's latest all along (as if every re-sent batch came back after the retention):
    /// the batches whose outcome is gone are refused, not applied again, so the counter still
    /// ends at exactly the number of increments, and the refused ones are kept as failed
    /// writes. (A refusal closes the write stream and the batches answered after it are sent
    /// again; their outcomes are pruned by then too, so most batches end refused here: with a
    /// real retention of a day or more, only those re-sent after it are.)
    @Test func incrementsCountExactlyOnceWhileOutcomesArePruned() async throws {
        try await thousandIncrements(pruningOutcomes: true, total: 300)
    }

    private func thousandIncrements(pruningOutcomes: Bool, total: Int = 1_000) async throws {
        let server = try await LiveServer(outcomeRetentionMicros: pruningOutcomes ? 0 : nil)
        defer { server.removeData() }
        let proxy = try CuttingProxy(targetPort: server.address.port, seed: 0x5EED_0F_C075)
        defer { proxy.stop() }
        let pruning = Task {
            guard pruningOutcomes else { return 0 }
            var pruned = 0
            while !Task.isCancelled {
                pruned += await server.core.runMaintenance().outcomesPruned
                try? await Task.sleep(for: .milliseconds(2))
            }
            return pruned
        }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-proxy-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = try await server.token(uid: "alice")
        let endpoint = try ServerEndpoint(url: "http://127.0.0.1:\(proxy.port)") { token }
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "alice", server: endpoint)
        let counter = try store.document("counters/c1")

        _ = try await counter.setData(["n": 0])
        // All the increments are accepted locally first (the queue holds them all), then the
        // client sends them, at most 10 in flight (a `writeBatches` frame of 10 at a time),
        // across dozens of cut connections.
        for _ in 0..<total {
            _ = try await counter.updateData(["n": .increment(1)])
        }
        let drained = await eventually(300) { await store.pendingWriteCount == 0 }
        let left = await store.pendingWriteCount
        #expect(drained, "the queue never drained (\(left) left); proxy: \(proxy.statistics)")
        pruning.cancel()
        let pruned = await pruning.value

        let stats = proxy.statistics
        let failed = try await store.failedWrites()
        print("exactly-once-proxy: \(total) increments over \(stats.connections) connections; \(stats.cuts) cut right after a write answer, \(stats.passed) batch results passed; \(pruned) outcomes pruned, \(failed.count) re-sent batches refused")
        #expect(await store.pendingWriteCount == 0)
        // The server, read over its own connection (not through the proxy).
        let onServer = try await ServerReads.document("counters/c1", url: server.url, token: token)
        #expect(onServer?["n"] == .integer(Int64(total)), "the server's counter: \(String(describing: onServer))")
        if pruningOutcomes {
            // Outcomes were pruned under the re-sends, and some re-sent batches found theirs gone.
            #expect(pruned > 0 && !failed.isEmpty, "\(pruned) pruned, \(failed.count) refused")
            for write in failed {
                #expect(write.error.isBatchProcessedBefore && write.error.message.contains("not applied again"), "\(write.error)")
            }
        } else {
            #expect(failed.isEmpty)
            #expect(try await counter.getDocument(source: .cache).get("n") == .integer(Int64(total)))
        }
        // The proxy really cut: many commits never reached the client the first time (each
        // cut answer held up to 10 of them), and every batch (the set and the increments) was
        // answered at least once. (With pruning, refusals end most connections first.)
        #expect(stats.cuts >= (pruningOutcomes ? 1 : 25), "only \(stats.cuts) cuts")
        #expect(stats.passed + failed.count >= total + 1, "only \(stats.passed) batch results reached the client")

        await store.close()
        proxy.stop()
        await server.stop()
    }
}

/// A TCP proxy on 127.0.0.1 (plain sockets, a thread per direction and connection) that
/// forwards client bytes to the server untouched and reads the server's bytes as WebSocket
/// frames: after the HTTP upgrade answer, each complete frame is forwarded — except a text
/// frame carrying a `writeResult` or `writeResults` after the connection's first one, which a
/// seeded coin flip may drop; the proxy then closes both sides of that connection at once.
final class CuttingProxy: Sendable {
    private let links: ProxyLinks
    private let targetPort: Int
    private let random: Mutex<SplitMix64>
    private let counts = Mutex(Statistics())

    struct Statistics: Sendable, CustomStringConvertible {
        var connections = 0
        var cuts = 0
        /// Batch results that reached the client (a `writeResults` frame holds several).
        var passed = 0
        var description: String { "\(connections) connections, \(cuts) cuts, \(passed) batch results passed" }
    }

    var statistics: Statistics { counts.withLock { $0 } }

    init(targetPort: Int, seed: UInt64) throws {
        self.targetPort = targetPort
        random = Mutex(SplitMix64(seed: seed))
        links = try ProxyLinks(backlog: 64)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    var port: Int { links.port }

    /// Stops accepting and closes every open connection. Safe to call more than once.
    func stop() { links.stop() }

    private func acceptLoop() {
        while let client = links.accept() {
            guard let server = connectProxied(client, toLoopbackPort: targetPort) else { continue }
            let link = Link(client: client, server: server)
            guard links.admit(link) else { return }
            counts.withLock { $0.connections += 1 }
            Thread.detachNewThread { [self] in
                link.pump(from: link.client, to: link.server) { bytes, _ in .forward(bytes) }
                links.retire(link)
            }
            Thread.detachNewThread { [self] in
                var frames = FrameSplitter()
                var passedHere = 0
                link.pump(from: link.server, to: link.client) { bytes, _ in
                    var out: [UInt8] = []
                    for piece in frames.feed(bytes) {
                        if piece.results > 0 {
                            // The first result of a connection always passes: the client resets
                            // its reconnect backoff only when a write is acknowledged (a
                            // completed handshake does not prove the server healthy), so cutting
                            // it would make every later reconnect wait longer, up to a minute.
                            let cut = passedHere > 0 && random.withLock { $0.next() % 2 == 0 }
                            if cut {
                                counts.withLock { $0.cuts += 1 }
                                return .cut(before: out)
                            }
                            counts.withLock { $0.passed += piece.results }
                            passedHere += 1
                        }
                        out += piece.bytes
                    }
                    return .forward(out)
                }
                links.retire(link)
            }
        }
    }

    /// One proxied connection: the client's socket and the server's.
    final class Link: Sendable {
        let client: Int32
        let server: Int32
        /// Pumps still running; the last one to end closes both sockets.
        private let running = Mutex(2)

        init(client: Int32, server: Int32) {
            self.client = client
            self.server = server
        }

        enum Step {
            case forward([UInt8])
            /// Forward these bytes, then cut the connection.
            case cut(before: [UInt8])
        }

        /// Reads from `source` until it ends, passing every chunk through `transform`.
        func pump(from source: Int32, to destination: Int32, _ transform: ([UInt8], Int) -> Step) {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                switch transform(Array(buffer[0..<count]), count) {
                case .forward(let bytes):
                    if !Self.send(bytes, to: destination) { cut(); return }
                case .cut(let before):
                    _ = Self.send(before, to: destination)
                    cut()
                    return
                }
            }
            cut()
        }

        /// Ends both directions at once (the other pump's read returns).
        func cut() {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(server, Int32(SHUT_RDWR))
        }

        /// A pump ended; true for the last one, which closes the sockets.
        @discardableResult
        func finish() -> Bool {
            let last = running.withLock { count -> Bool in
                count -= 1
                return count == 0
            }
            if last {
                close(client)
                close(server)
            }
            return last
        }

        private static func send(_ bytes: [UInt8], to fd: Int32) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let sent = bytes.withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
                }
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }
}

/// Splits the server's byte stream into the HTTP upgrade answer and then whole WebSocket
/// frames (RFC 6455 §5.2); a frame is held back until it is complete.
struct FrameSplitter {
    struct Piece {
        var bytes: [UInt8]
        /// The committed batches the frame answers: 1 for a `writeResult`, one per committed
        /// answer of a `writeResults`.
        var results: Int
    }

    private var buffer: [UInt8] = []
    private var upgraded = false
    private static let marker = Array(#""writeResult""#.utf8)
    private static let groupMarker = Array(#""writeResults""#.utf8)
    private static let committedMarker = Array(#""commitVersion""#.utf8)

    mutating func feed(_ bytes: [UInt8]) -> [Piece] {
        buffer += bytes
        var pieces: [Piece] = []
        if !upgraded {
            guard let end = Self.find([13, 10, 13, 10], in: buffer[...]) else { return [] }
            pieces.append(Piece(bytes: Array(buffer[..<(end + 4)]), results: 0))
            buffer.removeFirst(end + 4)
            upgraded = true
        }
        while buffer.count >= 2 {
            let opcode = buffer[0] & 0x0F
            let masked = buffer[1] & 0x80 != 0
            var length = Int(buffer[1] & 0x7F)
            var header = 2
            if length == 126 {
                guard buffer.count >= 4 else { break }
                length = Int(buffer[2]) << 8 | Int(buffer[3])
                header = 4
            } else if length == 127 {
                guard buffer.count >= 10 else { break }
                length = (2..<10).reduce(0) { $0 << 8 | Int(buffer[$1]) }
                header = 10
            }
            if masked { header += 4 }
            guard buffer.count >= header + length else { break }
            let frame = Array(buffer[..<(header + length)])
            buffer.removeFirst(header + length)
            let isText = opcode == 0x1
            var results = 0
            if isText && !masked {
                if Self.find(Self.marker, in: frame[header...]) != nil {
                    results = 1
                } else if Self.find(Self.groupMarker, in: frame[header...]) != nil {
                    results = Self.count(Self.committedMarker, in: frame[header...])
                }
            }
            pieces.append(Piece(bytes: frame, results: results))
        }
        return pieces
    }

    static func count(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int {
        var count = 0
        var rest = haystack
        while let i = find(needle, in: rest) {
            count += 1
            rest = rest[(i + needle.count)...]
        }
        return count
    }

    static func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = haystack.startIndex
        while i + needle.count <= haystack.endIndex {
            if haystack[i] == needle[0], haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
