public import DocProtocol
internal import DocModel
internal import Synchronization

/// The frames waiting to be sent to one connection, in order: an `AsyncSequence` of their
/// messages with a single consumer, which may also take the frames themselves to write their
/// encodings: a task awaiting ``nextFrame()``, or a transport that writes from its own thread
/// when told that frames wait (``onFramesWaiting(_:)`` and ``takeFrame()``, how the WebSocket
/// server's ``OutboxPump`` avoids waking a task per connection).
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
        /// Called when frames are queued while ``wakeArmed`` (see ``onFramesWaiting(_:)``).
        var wake: (@Sendable () -> Void)?
        /// Whether the consumer found the outbox empty and waits for `wake`.
        var wakeArmed = false
        var count: Int { buffer.count - head }

        /// `wake`, disarmed, if frames just queued should call it (`always`: also when not
        /// armed, for the end of the outbox, which its consumer must see whatever it waits for).
        mutating func takeWake(always: Bool = false) -> (@Sendable () -> Void)? {
            guard let wake, wakeArmed || always else { return nil }
            wakeArmed = false
            return wake
        }

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

    /// An empty outbox that cuts the connection off when more than `capacity` frames wait (not
    /// checked: below 1, the first frame already does).
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
        let (accepted, resume, wake) = state.withLock {
            s -> (Bool, (CheckedContinuation<OutboundFrame?, Never>, OutboundFrame?)?, (@Sendable () -> Void)?) in
            guard !s.finished else { return (false, nil, nil) }
            if s.count + frames.count > capacity {
                s.buffer = [OutboundFrame(.error(.init(DocError(.resourceExhausted,
                    "the client did not read its frames fast enough (more than \(capacity) waiting); reconnect and resume"), fatal: true)))]
                s.head = 0
                s.finished = true
                if let waiter = s.waiter {
                    s.waiter = nil
                    return (false, (waiter, s.pop()), nil)
                }
                return (false, nil, s.takeWake(always: true))
            }
            s.buffer.append(contentsOf: frames)
            if let waiter = s.waiter {
                s.waiter = nil
                return (true, (waiter, s.pop()), nil)
            }
            return (true, nil, s.takeWake())
        }
        if let (waiter, frame) = resume { waiter.resume(returning: frame) }
        wake?()
        return accepted
    }

    /// Ends the sequence after the frames already queued and `last`, if given.
    public func finish(with last: ServerMessage? = nil) {
        let (resume, wake) = state.withLock {
            s -> ((CheckedContinuation<OutboundFrame?, Never>, OutboundFrame?)?, (@Sendable () -> Void)?) in
            guard !s.finished else { return (nil, nil) }
            if let last { s.buffer.append(OutboundFrame(last)) }
            s.finished = true
            if let waiter = s.waiter {
                s.waiter = nil
                return ((waiter, s.pop()), nil)
            }
            return (nil, s.takeWake(always: true))
        }
        if let (waiter, frame) = resume { waiter.resume(returning: frame) }
        wake?()
    }

    /// What ``takeFrame()`` found.
    package enum Take: Sendable {
        /// The oldest frame waiting, now taken.
        case frame(OutboundFrame)
        /// None waits: the outbox calls its ``onFramesWaiting(_:)`` handler when one does.
        case empty
        /// None waits, and none will: the outbox is finished.
        case finished
    }

    /// Sets the handler a consumer that does not await ``nextFrame()`` is woken with. It is
    /// called outside the outbox's lock, on the thread that queued the frames:
    /// - when frames are queued after a ``takeFrame()`` found none (once, until the next
    ///   ``takeFrame()`` that finds none);
    /// - when the outbox is finished (an overflow, ``finish(with:)``), even if the consumer's
    ///   last ``takeFrame()`` found frames: a consumer that held frames back (a socket that
    ///   takes no more) must still learn that the last of them are due.
    ///
    /// Frames already waiting do not call it: the consumer takes them first.
    package func onFramesWaiting(_ wake: @escaping @Sendable () -> Void) {
        state.withLock { s in
            s.wake = wake
            s.wakeArmed = false
        }
    }

    /// Takes the oldest frame waiting, without waiting: ``Take/empty`` arms the
    /// ``onFramesWaiting(_:)`` handler for the next frame queued.
    package func takeFrame() -> Take {
        state.withLock { s in
            if let frame = s.pop() { return .frame(frame) }
            if s.finished { return .finished }
            s.wakeArmed = true
            return .empty
        }
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
