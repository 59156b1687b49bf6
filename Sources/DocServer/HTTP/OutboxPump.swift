internal import NIOCore

/// Writes one `/listen` connection's outbound frames (its ``ConnectionOutbox``) to its socket
/// from the connection's event loop, instead of a task per connection that awaits each frame
/// and hands it to the WebSocket writer.
///
/// A commit's fan-out queues frames in many outboxes at once. Each outbox wakes its pump
/// (``ConnectionOutbox/onFramesWaiting(_:)``), which joins its event loop's ``PumpQueue``:
/// one event-loop task then writes the frames of every connection of that loop, each
/// connection's frames followed by one flush, so they leave in one `writev`. A shared frame
/// (``OutboundFrame/shared(_:)``) is written as the WebSocket frame bytes it already holds,
/// header included: nothing is encoded or copied per connection. Before, a fan-out to 1,000
/// connections woke 1,000 send-loop tasks, and each frame went through hummingbird-websocket's
/// writer (its actor, an `NIOAsyncWriter`, an event-loop task and a flush of its own).
///
/// The handler sits on the socket's side of the WebSocket frame encoder (it writes finished
/// frames); what the WebSocket writer still sends (pongs, the close frame) passes through it.
///
/// - Order: the pump is the only writer of the connection's frames, in outbox order.
///   ``ended`` succeeds once the outbox has finished and its last frame is written (or the
///   channel is gone); only then does the session close the socket with the WebSocket writer,
///   so its close frame comes after every frame. When the writer sends a close frame of its
///   own (the client closed, a protocol error, shutdown: ``CloseFrameWatcher``), the pump
///   stops: nothing follows a close frame.
/// - Backpressure: frames stay in the outbox while the channel is not writable (its bound then
///   cuts off a client that does not read; ``ConnectionOutbox``), and the pump goes on when
///   the channel is writable again. The last frames of a finished outbox (at most its
///   capacity; after an overflow, the one error frame) are written regardless, and the
///   channel is closed ``closeDeadline`` later if it is still open then: a client that does
///   not read would otherwise keep it open (the writer's close frame waits for the socket to
///   take it).
///
/// Its state is touched on the channel's event loop only (the outbox's wake-up handler only
/// queues the pump on its loop's ``PumpQueue``): hence `@unchecked Sendable`.
final class OutboxPump: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let outbox: ConnectionOutbox
    private let queue: PumpQueue
    /// Succeeds once the pump has written the finished outbox's last frame, or its channel is
    /// gone (closed, or the handler removed).
    let ended: EventLoopPromise<Void>
    private var context: ChannelHandlerContext?
    /// The context's channel, held while the handler is in its pipeline (reading it through
    /// the context on every frame was a weak load and retains).
    private var channel: (any Channel)?
    private var isEnded = false
    /// The close of a channel whose outbox has finished (see ``closeDeadline``).
    private var deadline: Scheduled<Void>?

    /// How long after its outbox's last frame a connection may stay open: time for the client
    /// to read it and answer the close frame.
    static let closeDeadline = TimeAmount.seconds(10)

    /// - Parameter ended: made on the channel's event loop; see ``ended``.
    init(outbox: ConnectionOutbox, queue: PumpQueue, ended: EventLoopPromise<Void>) {
        self.outbox = outbox
        self.queue = queue
        self.ended = ended
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        channel = context.channel
        outbox.onFramesWaiting { [weak self, queue] in
            if let self { queue.enqueue(self) }
        }
        pump()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        end()
        deadline?.cancel()
        deadline = nil
        self.context = nil
        channel = nil
    }

    /// The WebSocket writer is sending a close frame: no frame may follow it.
    func closeSent() {
        end()
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pump() }
        context.fireChannelWritabilityChanged()
    }

    /// Writes the frames waiting, as many as the channel takes (all of a finished outbox),
    /// and flushes them once. On the channel's event loop.
    func pump() {
        guard let context, let channel, !isEnded else { return }
        context.eventLoop.assertInEventLoop()
        var wrote = false
        var finished = false
        taking: while channel.isWritable || outbox.isFinished {
            switch outbox.takeFrame() {
            case .frame(let frame):
                context.write(wrapOutboundOut(frame.webSocketFrame), promise: nil)
                wrote = true
            case .empty:
                break taking
            case .finished:
                finished = true
                break taking
            }
        }
        if wrote { context.flush() }
        if finished {
            end()
            deadline = context.eventLoop.scheduleTask(in: Self.closeDeadline) { channel.close(promise: nil) }
        }
    }

    private func end() {
        guard !isEnded else { return }
        isEnded = true
        ended.succeed(())
    }
}
