public import DocProtocol
public import NIOCore
internal import Synchronization

/// One frame on its way to a connection: the message and, for a frame that goes to many
/// connections at once (a commit's change to every listener of the same target), one encoding
/// they all share.
///
/// The bytes are what ``FrameEncoder`` writes for the message; a shared frame is encoded once,
/// by the first connection that sends it, and every connection then writes the same
/// `ByteBuffer` storage (a `ByteBuffer` is copied on write only, and sending never writes to it).
public struct OutboundFrame: Sendable {
    private enum Storage: Sendable {
        /// Encoded when sent, for this connection alone.
        case own(ServerMessage)
        /// One reference for every connection: queuing the frame copies no message.
        case shared(SharedFrame)
    }

    private let storage: Storage

    /// A frame for one connection, encoded when it is sent.
    public init(_ message: ServerMessage) {
        storage = .own(message)
    }

    /// A frame that several connections send: encoded at most once, whichever sends it first.
    public static func shared(_ message: ServerMessage) -> OutboundFrame {
        OutboundFrame(storage: .shared(SharedFrame(message)))
    }

    private init(storage: Storage) {
        self.storage = storage
    }

    /// The message the frame carries.
    public var message: ServerMessage {
        switch storage {
        case .own(let message): return message
        case .shared(let frame): return frame.message
        }
    }

    /// Whether every connection given this frame writes the same encoding.
    public var isShared: Bool {
        if case .shared = storage { return true }
        return false
    }

    /// The frame's bytes: the message's UTF-8 JSON, byte for byte what ``FrameEncoder`` writes.
    public var encoded: ByteBuffer {
        switch storage {
        case .own(let message): return SharedFrame.encode(message)
        case .shared(let frame): return frame.encoded
        }
    }
}

/// A shared frame's message and its encoding, made once. The lock is held while encoding, so a
/// second connection asking at that moment waits for the first one's bytes instead of encoding
/// them again.
private final class SharedFrame: Sendable {
    let message: ServerMessage
    private let encoding = Mutex<ByteBuffer?>(nil)

    init(_ message: ServerMessage) {
        self.message = message
    }

    var encoded: ByteBuffer {
        encoding.withLock { buffer in
            if let buffer { return buffer }
            let encoded = Self.encode(message)
            buffer = encoded
            return encoded
        }
    }

    static func encode(_ message: ServerMessage) -> ByteBuffer {
        ByteBuffer(bytes: FrameEncoder.encode(message))
    }
}
