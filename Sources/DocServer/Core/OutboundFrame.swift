public import DocProtocol
public import NIOCore

/// One frame on its way to a connection: the message and, for a frame that goes to many
/// connections at once (a commit's change to every listener of the same target), one encoding
/// they all share.
///
/// The bytes are what ``FrameEncoder`` writes for the message; a shared frame is encoded once,
/// when it is made, and every connection then writes the same `ByteBuffer` storage (a
/// `ByteBuffer` is copied on write only, and sending never writes to it).
public struct OutboundFrame: Sendable {
    private enum Storage: Sendable {
        /// Encoded when sent, for this connection alone.
        case own(ServerMessage)
        /// Encoded once when made; every connection given the frame writes this buffer.
        case shared(ServerMessage, ByteBuffer)
    }

    private let storage: Storage

    /// A frame for one connection, encoded when it is sent.
    public init(_ message: ServerMessage) {
        storage = .own(message)
    }

    /// A frame that several connections send: encoded here, once (by the hub, which makes
    /// few of them per commit), so the connections' send loops only write it.
    public static func shared(_ message: ServerMessage) -> OutboundFrame {
        OutboundFrame(storage: .shared(message, encode(message)))
    }

    private init(storage: Storage) {
        self.storage = storage
    }

    /// The message the frame carries.
    public var message: ServerMessage {
        switch storage {
        case .own(let message), .shared(let message, _): return message
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
        case .own(let message): return Self.encode(message)
        case .shared(_, let buffer): return buffer
        }
    }

    private static func encode(_ message: ServerMessage) -> ByteBuffer {
        ByteBuffer(bytes: FrameEncoder.encode(message))
    }
}
