import DocModel
import DocProtocol

/// The connection state shared by ``NetworkWatchStream`` and ``NetworkWriteStream``: each
/// stream is one connection with its own `hello`, started and stopped by the remote store.
///
/// - ``start()`` begins a new *generation* and spawns a ``StreamSession`` for it; events come
///   back through the ``StreamEventRouter`` on the client core's actor and reach
///   ``onEvent`` only while their generation is the current one. ``stop()`` (and a close)
///   start a new generation, so anything a stopped or replaced connection still reports is
///   ignored.
/// - ``send(_:)`` queues a frame for the session's sender, which sends in order.
/// - ``markIdle()`` closes an open stream after ``idleTimeout`` unless it is used meanwhile.
///
/// Used on the client core's actor only; it never calls the stream's delegate itself.
final class NetworkStreamLink {
    /// How long an idle stream stays open (Firestore: one minute).
    static let idleTimeout: Duration = .seconds(60)

    /// Receives the current generation's events (set by the owning stream).
    var onEvent: (StreamEvent) -> Void = { _ in }

    private let configuration: NetworkConfiguration
    private let clientID: ClientIdentity
    private let router: StreamEventRouter
    private let scheduler: any Scheduler
    private let idleTimerID: TimerID
    private var streamID = 0
    private var generation = 0
    private var session: Task<Void, Never>?
    private var outgoing: AsyncStream<String>.Continuation?
    private var idleTimer: (any ScheduledTimer)?

    /// `start()` was called and the stream has not stopped or closed since.
    private(set) var isStarted = false
    /// The server answered `hello`: frames may be sent.
    private(set) var isOpen = false
    /// How the last connection was when it closed: open (its `hello` answered), and idle
    /// (``markIdle()`` waiting, nothing sent since).
    private(set) var lastClose = (wasOpen: false, wasIdle: false)

    init(configuration: NetworkConfiguration, clientID: ClientIdentity, router: StreamEventRouter, scheduler: any Scheduler, idleTimerID: TimerID) {
        self.configuration = configuration
        self.clientID = clientID
        self.router = router
        self.scheduler = scheduler
        self.idleTimerID = idleTimerID
        streamID = router.register { [weak self] generation, event in
            self?.handle(generation, event)
        }
    }

    deinit {
        // The store went away without closing: end the connection task with it.
        outgoing?.finish()
        session?.cancel()
    }

    /// Starts connecting (a new generation). Starting a started stream does nothing.
    func start() {
        guard !isStarted else { return }
        generation += 1
        isStarted = true
        isOpen = false
        let (frames, continuation) = AsyncStream.makeStream(of: String.self)
        outgoing = continuation
        session = StreamSession.start(
            configuration: configuration, clientID: clientID.current, outgoing: frames,
            sink: router.sink(stream: streamID, generation: generation))
    }

    /// Disconnects; events of the old connection are ignored from now on.
    func stop() {
        generation += 1
        cancelIdle()
        outgoing?.finish()
        outgoing = nil
        session?.cancel()
        session = nil
        isStarted = false
        isOpen = false
    }

    /// Queues a frame for the server (dropped when the stream is not open).
    func send(_ message: ClientMessage) {
        send(frame: FrameEncoder.string(message))
    }

    /// Queues an encoded frame for the server (dropped when the stream is not open).
    func send(frame: String) {
        guard isOpen else { return }
        cancelIdle()
        outgoing?.yield(frame)
    }

    /// Closes the stream after ``idleTimeout`` unless it is used before; `onIdleClose` runs
    /// when it does close.
    func markIdle(onIdleClose: @escaping () -> Void) {
        guard isOpen, idleTimer == nil else { return }
        idleTimer = scheduler.schedule(idleTimerID, after: Self.idleTimeout) { [weak self] in
            guard let self else { return }
            self.idleTimer = nil
            self.stop()
            onIdleClose()
        }
    }

    private func cancelIdle() {
        idleTimer?.cancel()
        idleTimer = nil
    }

    private func handle(_ eventGeneration: Int, _ event: StreamEvent) {
        guard eventGeneration == generation, isStarted else { return }
        switch event {
        case .opened:
            isOpen = true
        case .closed:
            // The session has ended; forget it without cancelling anything.
            lastClose = (isOpen, idleTimer != nil)
            generation += 1
            cancelIdle()
            outgoing?.finish()
            outgoing = nil
            session = nil
            isStarted = false
            isOpen = false
        case .received:
            break
        }
        onEvent(event)
    }
}
