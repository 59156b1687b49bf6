internal import NIOCore

/// Passes on one flush for the writes a connection's event loop has queued together.
///
/// The WebSocket writer writes and flushes every frame on its own, so a commit's two frames to
/// a listener (its change, then the global snapshot) would leave as two socket writes and two
/// TCP segments, and usually wake the client twice. This handler, nearest the socket, defers a
/// flush to a task queued behind whatever the event loop already has to do: frames handed over
/// together (a fan-out hands every connection its frames at once) leave in one `writev`. The
/// frames and their order are untouched; only when the bytes reach the socket changes, by at
/// most the event loop tasks queued before the flush.
///
/// A close (or the handler's removal) flushes at once what is waiting, so nothing written
/// before it is dropped.
final class FlushCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Whether a flush was asked for and has not been passed on yet.
    private var flushPending = false

    func flush(context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        context.eventLoop.assumeIsolated().execute {
            guard self.flushPending else { return }
            self.flushPending = false
            context.flush()
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        flushNow(context)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        flushNow(context)
    }

    private func flushNow(_ context: ChannelHandlerContext) {
        guard flushPending else { return }
        flushPending = false
        context.flush()
    }
}
