import Testing
import NIOCore
import NIOEmbedded
@testable import DocServer

/// The handler nearest the socket merges the flushes of writes queued together into one and
/// never holds back what a close must send.
@Suite("Flush coalescing")
struct FlushCoalescingHandlerTests {
    func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FlushCoalescingHandler())
        return channel
    }

    func frame(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test func framesFlushedOneByOneLeaveTogether() throws {
        let channel = try channel()
        channel.writeAndFlush(frame("change"), promise: nil)
        channel.writeAndFlush(frame("snapshot"), promise: nil)
        // Nothing reached the socket yet: the flush waits behind the queued tasks.
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == frame("change"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == frame("snapshot"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        // A later frame gets a flush of its own.
        channel.writeAndFlush(frame("next"), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == frame("next"))
        _ = try channel.finish()
    }

    @Test func aCloseSendsWhatWaitsForItsFlush() throws {
        let channel = try channel()
        channel.writeAndFlush(frame("error"), promise: nil)
        let written = channel.embeddedEventLoop.makePromise(of: Void.self)
        channel.write(frame("last"), promise: written)
        channel.flush()
        var sent = false
        written.futureResult.whenSuccess { sent = true }
        // Closing before the loop ran the deferred flush: both frames go out first.
        channel.close(promise: nil)
        #expect(sent)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == frame("error"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == frame("last"))
    }

    @Test func aWriteWithoutAFlushIsNotFlushed() throws {
        let channel = try channel()
        channel.write(frame("unflushed"), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        channel.flush()
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == frame("unflushed"))
        _ = try channel.finish()
    }
}
