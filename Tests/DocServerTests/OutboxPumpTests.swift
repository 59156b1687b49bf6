import DocModel
import DocProtocol
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing
@testable import DocServer

/// The `/listen` connections' writer: an outbox's frames leave as WebSocket text frames, in
/// order, one flush for the frames written together; frames wait while the socket cannot take
/// more, except a finished outbox's last ones; the pump ends with the outbox or the channel.
@Suite("Outbox pump")
struct OutboxPumpTests {
    /// A channel with a pump for `outbox` (what `ListenSession` installs after the handshake).
    func pumped(_ outbox: ConnectionOutbox) throws -> (EmbeddedChannel, OutboxPump) {
        let channel = EmbeddedChannel()
        let pump = pump(outbox, on: channel)
        try channel.pipeline.syncOperations.addHandler(pump)
        return (channel, pump)
    }

    /// A pump for `outbox` on `channel`'s loop, not yet in its pipeline.
    func pump(_ outbox: ConnectionOutbox, on channel: EmbeddedChannel) -> OutboxPump {
        OutboxPump(outbox: outbox, queue: PumpQueue(eventLoop: channel.embeddedEventLoop), ended: channel.embeddedEventLoop.makePromise())
    }

    func message(_ n: Int64) -> ServerMessage {
        .targetChange(.init(state: .noChange, targetIDs: [], snapshotVersion: SnapshotVersion(microseconds: n)))
    }

    /// The messages of the WebSocket frames written to the socket so far (each a final,
    /// unmasked text frame holding one JSON message).
    func written(_ channel: EmbeddedChannel) throws -> [ServerMessage] {
        var messages: [ServerMessage] = []
        while var frame = try channel.readOutbound(as: ByteBuffer.self) {
            let first = frame.readInteger(as: UInt8.self)
            let second = frame.readInteger(as: UInt8.self)
            #expect(first == 0x81)
            var length = Int(try #require(second))
            if length == 126 {
                let extended = frame.readInteger(as: UInt16.self)
                length = Int(try #require(extended))
            }
            #expect(length < 65_536 && frame.readableBytes == length)
            messages.append(try FrameDecoder().decodeServerMessage(Array(frame.readableBytesView)))
        }
        return messages
    }

    func ended(_ pump: OutboxPump) -> Bool {
        let done = Mutex(false)
        pump.ended.futureResult.whenSuccess { done.withLock { $0 = true } }
        return done.withLock { $0 }
    }

    @Test func framesWaitingAndLaterOnesLeaveInOrder() throws {
        let outbox = ConnectionOutbox(capacity: 100)
        outbox.send([message(1)])
        let (channel, pump) = try pumped(outbox)
        // What waited is written as the pump joins the channel.
        #expect(try written(channel) == [message(1)])
        // Later frames, one shared: written by the loop's task, after one wake-up.
        outbox.send([message(2)])
        outbox.send(frames: [.shared(message(3)), OutboundFrame(message(4))])
        #expect(try written(channel) == [])
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == [message(2), message(3), message(4)])
        #expect(!ended(pump))
        _ = try channel.finish()
        #expect(ended(pump))
    }

    @Test func theFramesOfOneRunLeaveWithOneFlush() throws {
        let outbox = ConnectionOutbox(capacity: 100)
        let (channel, _) = try pumped(outbox)
        var flushes = 0
        let counter = FlushCounter { flushes += 1 }
        try channel.pipeline.syncOperations.addHandler(counter, position: .first)
        outbox.send([message(1), message(2)])
        outbox.send([message(3)])
        channel.embeddedEventLoop.run()
        #expect(try written(channel).count == 3)
        #expect(flushes == 1)
        _ = try channel.finish()
    }

    @Test func framesWaitWhileTheSocketTakesNoMore() throws {
        let outbox = ConnectionOutbox(capacity: 100)
        let (channel, pump) = try pumped(outbox)
        channel.isWritable = false
        outbox.send([message(1), message(2)])
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == [])
        #expect(outbox.pendingCount == 2)
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try written(channel) == [message(1), message(2)])
        #expect(!ended(pump))
        _ = try channel.finish()
    }

    @Test func aFinishedOutboxSendsItsLastFramesAndEnds() throws {
        let outbox = ConnectionOutbox(capacity: 100)
        let (channel, pump) = try pumped(outbox)
        channel.isWritable = false
        outbox.send([message(1)])
        outbox.finish(with: message(2))
        channel.embeddedEventLoop.run()
        // Written whatever the socket's backlog: the session closes the socket after them.
        #expect(try written(channel) == [message(1), message(2)])
        #expect(ended(pump))
        _ = try channel.finish()
    }

    @Test func anOverflowSendsTheFatalErrorToAClientThatDoesNotRead() throws {
        let outbox = ConnectionOutbox(capacity: 2)
        let (channel, pump) = try pumped(outbox)
        channel.isWritable = false
        outbox.send([message(1), message(2)])
        channel.embeddedEventLoop.run()
        #expect(!outbox.send([message(3)]))
        channel.embeddedEventLoop.run()
        let last = try written(channel)
        guard last.count == 1, case .error(let error) = last[0] else {
            Issue.record("expected only the fatal error, got \(last)")
            return
        }
        #expect(error.fatal && error.error.code == .resourceExhausted)
        #expect(ended(pump))
        _ = try channel.finish()
    }

    @Test func aClosedChannelEndsThePump() throws {
        let outbox = ConnectionOutbox(capacity: 100)
        let (channel, pump) = try pumped(outbox)
        _ = try channel.finish()
        #expect(ended(pump))
        // Frames queued later are not written anywhere (the channel is gone).
        outbox.send([message(1)])
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
    }

    @Test func otherWritesPassThrough() throws {
        let outbox = ConnectionOutbox(capacity: 100)
        let (channel, _) = try pumped(outbox)
        // What the WebSocket writer still sends (a pong, the close frame) reaches the socket.
        channel.writeAndFlush(ByteBuffer(bytes: [0x8A, 0x00]), promise: nil)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(bytes: [0x8A, 0x00]))
        _ = try channel.finish()
    }

    @Test func oneTaskRunsThePumpsOfALoop() throws {
        let loop = EmbeddedEventLoop()
        let queue = PumpQueue(eventLoop: loop)
        var channels: [EmbeddedChannel] = []
        var outboxes: [ConnectionOutbox] = []
        for _ in 0..<3 {
            let channel = EmbeddedChannel(loop: loop)
            let outbox = ConnectionOutbox(capacity: 10)
            try channel.pipeline.syncOperations.addHandler(
                OutboxPump(outbox: outbox, queue: queue, ended: loop.makePromise()))
            channels.append(channel)
            outboxes.append(outbox)
        }
        for (i, outbox) in outboxes.enumerated() { outbox.send(frames: [.shared(message(Int64(i)))]) }
        // One loop task for the three wake-ups, which writes all three.
        loop.run()
        #expect(queue.runs == 1)
        for (i, channel) in channels.enumerated() { #expect(try written(channel) == [message(Int64(i))]) }
        for channel in channels { _ = try channel.finish() }
    }

    @Test func framesWaitingWhenThePumpJoinsAnUnwritableChannelLeaveLater() throws {
        let outbox = ConnectionOutbox(capacity: 100)
        outbox.send([message(1)])
        let channel = EmbeddedChannel()
        channel.isWritable = false
        try channel.pipeline.syncOperations.addHandler(pump(outbox, on: channel))
        #expect(try written(channel) == [])
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try written(channel) == [message(1)])
        _ = try channel.finish()
    }

    @Test func noFrameFollowsTheWritersCloseFrame() throws {
        // The pipeline ListenSession builds: the pump on the socket's side of the frame
        // encoder, the watcher on the other.
        let outbox = ConnectionOutbox(capacity: 100)
        let channel = EmbeddedChannel()
        let encoder = WebSocketFrameEncoder()
        let pump = pump(outbox, on: channel)
        try channel.pipeline.syncOperations.addHandler(encoder)
        try channel.pipeline.syncOperations.addHandler(pump, position: .before(encoder))
        try channel.pipeline.syncOperations.addHandler(CloseFrameWatcher(pump: pump), position: .after(encoder))
        outbox.send([message(1)])
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == [message(1)])
        // The writer answers the client's close (or a protocol error): its close frame...
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: ByteBuffer(bytes: [0x03, 0xE9])), promise: nil)
        var closeBytes: [UInt8] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { closeBytes += Array(buffer.readableBytesView) }
        #expect(closeBytes == [0x88, 0x02, 0x03, 0xE9])
        #expect(ended(pump))
        // ...is the last frame: frames queued after it are not written.
        outbox.send([message(2)])
        outbox.finish()
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        _ = try channel.finish()
    }

    @Test func aFinishedConnectionThatStaysOpenIsClosedAfterTheDeadline() throws {
        let outbox = ConnectionOutbox(capacity: 100)
        let (channel, pump) = try pumped(outbox)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channel.isWritable = false   // a client that does not read
        outbox.finish(with: message(1))
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == [message(1)])
        #expect(ended(pump))
        channel.embeddedEventLoop.advanceTime(by: OutboxPump.closeDeadline - .milliseconds(1))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test func webSocketHeadersOfEveryLength() {
        for (count, header) in [(0, [0x81, 0]), (125, [0x81, 125]), (126, [0x81, 126, 0, 126]),
                                (65_535, [0x81, 126, 0xFF, 0xFF]),
                                (65_536, [0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0])] as [(Int, [UInt8])] {
            let (frame, headerBytes) = OutboundFrame.webSocketTextFrame([UInt8](repeating: 0x61, count: count))
            #expect(headerBytes == header.count)
            #expect(Array(frame.readableBytesView.prefix(headerBytes)) == header)
            #expect(frame.readableBytes == headerBytes + count)
        }
        // A shared frame's payload is its frame's bytes after the header.
        let shared = OutboundFrame.shared(message(7))
        #expect(Array(shared.webSocketFrame.readableBytesView.dropFirst(2)) == Array(shared.encoded.readableBytesView))
        #expect(shared.encoded == OutboundFrame(message(7)).encoded)
    }
}

/// Counts the flushes that reach the socket.
private final class FlushCounter: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    let counted: () -> Void
    init(_ counted: @escaping () -> Void) { self.counted = counted }
    func flush(context: ChannelHandlerContext) {
        counted()
        context.flush()
    }
}
