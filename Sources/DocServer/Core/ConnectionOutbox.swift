public import DocProtocol
internal import DocModel
internal import Synchronization

/// The frames waiting to be sent to one connection, in order: an `AsyncSequence` of their
/// messages with a single consumer (the transport's send loop), which may also take the
/// frames themselves (``nextFrame()``) to write their encodings.
///
/// Everything the server says to a connection goes through here — answers to its requests and
/// changes from other clients' commits alike — so the order is the order the server decided.
/// A frame many connections receive (``OutboundFrame/shared(_:)``) is queued in each of their
/// outboxes and encoded once for all of them.
///
/// The buffer is bounded: a client that does not read its frames fast enough is cut off (the
/// buffered frames are dropped, a fatal `resourceExhausted` error frame is the last thing
/// queued, and the sequence ends); it reconnects and resumes from its resume tokens.
public final class ConnectionOutbox: AsyncSequence, Sendable {
    public typealias Element = ServerMessage

    private struct State {
        var buffer: [OutboundFrame] = []
        var head = 0
        var finished = false
        var waiter: CheckedContinuation<OutboundFrame?, Never>?
        var count: Int { buffer.count - head }

        mutating func pop() -> OutboundFrame? {
            guard head < buffer.count else { return nil }
            let frame = buffer[head]
            head += 1
            if head > 1024 && head * 2 > buffer.count {
                buffer.removeFirst(head)
                head = 0
            }
            return frame
        }
    }

    private let state = Mutex(State())
    /// The most frames buffered before the connection is cut off.
    public let capacity: Int

    public init(capacity: Int) {
        self.capacity = capacity
    }

    /// Queues frames, each encoded for this connection alone; returns `false` when the outbox
    /// is finished (or just overflowed).
    @discardableResult
    public func send(_ messages: [ServerMessage]) -> Bool {
        send(frames: messages.map(OutboundFrame.init))
    }

    /// Queues frames (shared ones keep their shared encoding); returns `false` when the outbox
    /// is finished (or just overflowed).
    @discardableResult
    public func send(frames: [OutboundFrame]) -> Bool {
        guard !frames.isEmpty else { return true }
        let (accepted, resume) = state.withLock { s -> (Bool, (CheckedContinuation<OutboundFrame?, Never>, OutboundFrame?)?) in
            guard !s.finished else { return (false, nil) }
            if s.count + frames.count > capacity {
                s.buffer = [OutboundFrame(.error(.init(DocError(.resourceExhausted,
                    "the client did not read its frames fast enough (more than \(capacity) waiting); reconnect and resume"), fatal: true)))]
                s.head = 0
                s.finished = true
                if let waiter = s.waiter {
                    s.waiter = nil
                    return (false, (waiter, s.pop()))
                }
                return (false, nil)
            }
            s.buffer.append(contentsOf: frames)
            if let waiter = s.waiter {
                s.waiter = nil
                return (true, (waiter, s.pop()))
            }
            return (true, nil)
        }
        if let (waiter, frame) = resume { waiter.resume(returning: frame) }
        return accepted
    }

    /// Ends the sequence after the frames already queued and `last`, if given.
    public func finish(with last: ServerMessage? = nil) {
        let resume = state.withLock { s -> (CheckedContinuation<OutboundFrame?, Never>, OutboundFrame?)? in
            guard !s.finished else { return nil }
            if let last { s.buffer.append(OutboundFrame(last)) }
            s.finished = true
            if let waiter = s.waiter {
                s.waiter = nil
                return (waiter, s.pop())
            }
            return nil
        }
        if let (waiter, frame) = resume { waiter.resume(returning: frame) }
    }

    /// Whether the outbox no longer accepts frames.
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// The number of frames waiting.
    public var pendingCount: Int { state.withLock { $0.count } }

    /// Takes every frame waiting now, without waiting for more (for tests, and for transports
    /// that poll).
    public func drain() -> [ServerMessage] {
        drainFrames().map(\.message)
    }

    /// Takes every frame waiting now, with their encodings, without waiting for more.
    public func drainFrames() -> [OutboundFrame] {
        state.withLock { s in
            let out = Array(s.buffer[s.head...])
            s.buffer.removeAll()
            s.head = 0
            return out
        }
    }

    /// The next frame's message, waiting for one; `nil` once finished and empty (or when the
    /// waiting task is cancelled).
    public func next() async -> ServerMessage? {
        await nextFrame()?.message
    }

    /// The next frame, waiting for one; `nil` once finished and empty (or when the waiting task
    /// is cancelled).
    public func nextFrame() async -> OutboundFrame? {
        if let ready = state.withLock({ s -> OutboundFrame?? in
            if let frame = s.pop() { return .some(frame) }
            return s.finished ? .some(nil) : nil
        }) {
            return ready
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<OutboundFrame?, Never>) in
                let immediate = state.withLock { s -> OutboundFrame?? in
                    if let frame = s.pop() { return .some(frame) }
                    if s.finished || Task.isCancelled { return .some(nil) }
                    s.waiter = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<OutboundFrame?, Never>? in
                let w = s.waiter
                s.waiter = nil
                return w
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Iterates with ``next()``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let outbox: ConnectionOutbox
        public mutating func next() async -> ServerMessage? { await outbox.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(outbox: self) }
}
