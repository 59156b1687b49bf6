public import DocProtocol
public import NIOCore

/// One frame on its way to a connection: the message and, for a frame that goes to many
/// connections at once (a commit's change to every listener of the same target), one encoding
/// they all share.
///
/// The bytes are what ``FrameEncoder`` writes for the message; a shared frame is encoded once,
/// when it is made, and every connection then writes the same `ByteBuffer` storage (a
/// `ByteBuffer` is copied on write only, and sending never writes to it). The protocol runs
/// over WebSocket (docs/protocol.md), whose server frames are not masked, so a shared frame
/// also carries its whole WebSocket text frame (``webSocketFrame``), header included: every
/// connection writes those bytes to its socket as they are.
public struct OutboundFrame: Sendable {
    private enum Storage: Sendable {
        /// Encoded when sent, for this connection alone.
        case own(ServerMessage)
        /// Encoded once when made; every connection given the frame writes its buffers.
        case shared(Encoded)
    }

    /// A shared frame's message and encoding, in one object: a copy of the frame (one per
    /// connection it goes to, in its outbox) is one reference count, not one per buffer and
    /// per part of the message.
    private final class Encoded: Sendable {
        let message: ServerMessage
        /// A view of ``frame``'s bytes after the WebSocket header.
        let payload: ByteBuffer
        let frame: ByteBuffer

        init(message: ServerMessage, payload: ByteBuffer, frame: ByteBuffer) {
            self.message = message
            self.payload = payload
            self.frame = frame
        }
    }

    private let storage: Storage

    /// A frame for one connection, encoded when it is sent.
    public init(_ message: ServerMessage) {
        storage = .own(message)
    }

    /// A frame that several connections send: encoded here, once (by the hub, which makes
    /// few of them per commit), so the connections only write it.
    public static func shared(_ message: ServerMessage) -> OutboundFrame {
        let (frame, headerBytes) = webSocketTextFrame(FrameEncoder.encode(message))
        let payload = frame.getSlice(at: headerBytes, length: frame.readableBytes - headerBytes)!
        return OutboundFrame(storage: .shared(Encoded(message: message, payload: payload, frame: frame)))
    }

    private init(storage: Storage) {
        self.storage = storage
    }

    /// The message the frame carries.
    public var message: ServerMessage {
        switch storage {
        case .own(let message): return message
        case .shared(let encoded): return encoded.message
        }
    }

    /// Whether every connection given this frame writes the same encoding.
    var isShared: Bool {
        if case .shared = storage { return true }
        return false
    }

    /// The frame's bytes: the message's UTF-8 JSON, byte for byte what ``FrameEncoder`` writes.
    public var encoded: ByteBuffer {
        switch storage {
        case .own(let message): return ByteBuffer(bytes: FrameEncoder.encode(message))
        case .shared(let encoded): return encoded.payload
        }
    }

    /// The frame as a WebSocket server sends it: a final, unmasked text frame (RFC 6455,
    /// section 5.2) whose payload is ``encoded``.
    var webSocketFrame: ByteBuffer {
        switch storage {
        case .own(let message): return Self.webSocketTextFrame(FrameEncoder.encode(message)).frame
        case .shared(let encoded): return encoded.frame
        }
    }

    /// `payload` behind the header of a final, unmasked text frame, in one buffer, and the
    /// header's length.
    static func webSocketTextFrame(_ payload: [UInt8]) -> (frame: ByteBuffer, headerBytes: Int) {
        var frame = ByteBuffer()
        frame.reserveCapacity(payload.count + 10)
        frame.writeInteger(UInt8(0x81))   // FIN, opcode 1 (text)
        switch payload.count {
        case ..<126:
            frame.writeInteger(UInt8(payload.count))
        case ...0xFFFF:
            frame.writeInteger(UInt8(126))
            frame.writeInteger(UInt16(payload.count))
        default:
            frame.writeInteger(UInt8(127))
            frame.writeInteger(UInt64(payload.count))
        }
        let headerBytes = frame.writerIndex
        frame.writeBytes(payload)
        return (frame, headerBytes)
    }
}
