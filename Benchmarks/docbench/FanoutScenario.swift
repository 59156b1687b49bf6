import DocModel
import DocProtocol
import DocServer
import Foundation
import HummingbirdWSClient
import Logging
import Synchronization

/// `fanout`: `listeners` WebSocket connections listen to one document; a writer commits
/// `commits` times; each sample is the time from sending the commit to the moment the last
/// listener received the change. Server and clients share the machine (one process).
///
/// With `instances: 2` (`fanout-2`) the listeners are connected to one server instance and the
/// writer to another on the same PostgreSQL database: each change reaches the listeners'
/// instance as a commit notice and is read from the change log there.
func fanout(commits: Int, listeners: Int = 1_000, store: BenchStore = .leveldb, instances: Int = 1) async throws -> Result {
    let server = try await BenchServer(store: store)
    let writingServer = instances > 1 ? try await BenchServer(store: store) : server
    let arrivals = FanoutArrivals(listeners: listeners)
    let url = "ws://\(server.address.host):\(server.address.port)/listen"
    let writerURL = "ws://\(writingServer.address.host):\(writingServer.address.port)/listen"
    let documentPath = "rooms/hot"
    var connections: [Task<Void, Never>] = []
    let stopSignal = StopSignal()
    defer { stopSignal.fire() }   // also when the scenario fails: the listeners close
    for i in 0..<listeners {
        let token = try await server.token(uid: "listener-\(i)")
        connections.append(Task {
            _ = try? await WebSocketClient.connect(url: url, logger: Logger(label: "fanout")) { inbound, outbound, _ in
                try await outbound.write(.text(FrameEncoder.string(.hello(.init(token: token, clientID: "l\(i)")))))
                let target = try DocModel.Query(document: DocumentKey(documentPath)).toTarget()
                try await outbound.write(.text(FrameEncoder.string(.addTarget(.init(targetID: 2, target: target)))))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        await stopSignal.wait()
                        try? await outbound.close(.normalClosure, reason: nil)
                    }
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message, let decoded = try? FrameDecoder().decodeServerMessage(text) else { continue }
                        switch decoded {
                        case .targetChange(let change) where change.state == .current:
                            arrivals.ready()
                        case .documentChange(let change):
                            if case .integer(let seq)? = change.document.data["seq"] { arrivals.arrived(Int(seq)) }
                        default:
                            break
                        }
                    }
                    group.cancelAll()
                }
            }
        })
    }
    // Every listener has its initial snapshot before the first commit.
    let readyDeadline = ContinuousClock.now + .seconds(120)
    while arrivals.readyCount < listeners {
        guard ContinuousClock.now < readyDeadline else { throw DocError(.deadlineExceeded, "only \(arrivals.readyCount) of \(listeners) listeners became current") }
        try await Task.sleep(for: .milliseconds(20))
    }
    let writerToken = try await server.token(uid: "writer")
    let writer = BenchSocket(url: writerURL)
    try await writer.open(token: writerToken, clientID: "writer")
    var samples: [Double] = []
    for seq in 1...commits {
        let start = ContinuousClock.now
        arrivals.begin(seq, at: start)
        let key = try DocumentKey(documentPath)
        try await writer.send(.write(.init(clientID: "writer", batchID: seq, mutations: [.set(key, ObjectValue(["seq": .integer(Int64(seq))]))])))
        let deadline = ContinuousClock.now + .seconds(30)
        while arrivals.count(seq) < listeners {
            guard ContinuousClock.now < deadline else { throw DocError(.deadlineExceeded, "commit \(seq) reached \(arrivals.count(seq)) of \(listeners) listeners") }
            try await Task.sleep(for: .microseconds(200))
        }
        samples.append(micros(start.duration(to: arrivals.last(seq))))
    }
    stopSignal.fire()
    await writer.close()
    for connection in connections { await connection.value }
    if writingServer !== server { await writingServer.stop() }
    await server.stop()
    return Result(samples: samples, peer: nil, peerSamples: nil)
}

/// When each listener saw each commit.
final class FanoutArrivals: Sendable {
    private struct State {
        var ready = 0
        var counts: [Int: Int] = [:]
        var last: [Int: ContinuousClock.Instant] = [:]
    }
    private let state = Mutex(State())
    let listeners: Int
    init(listeners: Int) { self.listeners = listeners }

    func ready() { state.withLock { $0.ready += 1 } }
    var readyCount: Int { state.withLock { $0.ready } }
    func begin(_ seq: Int, at instant: ContinuousClock.Instant) { state.withLock { $0.counts[seq] = 0; $0.last[seq] = instant } }
    func arrived(_ seq: Int) {
        let now = ContinuousClock.now
        state.withLock { $0.counts[seq, default: 0] += 1; $0.last[seq] = now }
    }
    func count(_ seq: Int) -> Int { state.withLock { $0.counts[seq] ?? 0 } }
    func last(_ seq: Int) -> ContinuousClock.Instant { state.withLock { $0.last[seq]! } }
}

/// A one-shot signal many tasks wait for. Waiters sleep until it fires (the 1,000 listeners
/// share the machine with the server: they must not poll a timer while the commits are timed).
final class StopSignal: Sendable {
    private let state = Mutex<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func fire() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.fired = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let fired = state.withLock { s -> Bool in
                if s.fired { return true }
                s.waiters.append(continuation)
                return false
            }
            if fired { continuation.resume() }
        }
    }
}

/// A boolean that turns true once.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// A protocol connection for a benchmark's writer: send frames, the server's answers are
/// read and dropped.
final class BenchSocket: Sendable {
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Task<Void, Never>
    private let welcomed = Flag()
    private let outStream: AsyncStream<String>

    init(url: String) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        outgoing = continuation
        outStream = stream
        let welcomed = self.welcomed
        task = Task {
            _ = try? await WebSocketClient.connect(url: url, logger: Logger(label: "bench")) { inbound, outbound, _ in
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await text in stream { try? await outbound.write(.text(text)) }
                        try? await outbound.close(.normalClosure, reason: nil)
                    }
                    do {
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            if case .text(let text) = message, text.contains("\"welcome\"") { welcomed.set() }
                        }
                    } catch {}
                    continuation.finish()
                }
            }
        }
    }

    func open(token: String, clientID: String) async throws {
        outgoing.yield(FrameEncoder.string(.hello(.init(token: token, clientID: clientID))))
        let deadline = ContinuousClock.now + .seconds(30)
        while !welcomed.isSet {
            guard ContinuousClock.now < deadline else { throw DocError(.deadlineExceeded, "no welcome") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    func send(_ message: ClientMessage) async throws { outgoing.yield(FrameEncoder.string(message)) }

    func close() async {
        outgoing.finish()
        await task.value
    }
}
