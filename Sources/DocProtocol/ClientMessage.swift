internal import DocModel

/// A frame the client sends: one JSON object whose `"type"` names the message.
///
/// A connection starts with ``Hello``; after the server's `welcome`, the client may listen
/// (``AddTarget``, ``RemoveTarget``) and write (``WriteHandshake``, then ``Write`` batches, or several at once in
/// ``WriteBatches``)
/// on the same connection. A transport may also open one connection per stream.
public enum ClientMessage: Sendable, Hashable {
    /// `hello`: the handshake.
    case hello(Hello)
    /// `addTarget`: start listening to a target.
    case addTarget(AddTarget)
    /// `removeTarget`: stop listening to a target.
    case removeTarget(RemoveTarget)
    /// `writeHandshake`: open the write stream.
    case writeHandshake(WriteHandshake)
    /// `write`: commit a batch.
    case write(Write)
    /// `writeBatches`: commit several batches, each on its own.
    case writeBatches(WriteBatches)
    /// `aggregate`: count, sum or average a query on the server.
    case aggregate(Aggregate)

    /// The frame's `"type"`.
    public var type: String {
        switch self {
        case .hello: return Hello.wireType
        case .addTarget: return AddTarget.wireType
        case .removeTarget: return RemoveTarget.wireType
        case .writeHandshake: return WriteHandshake.wireType
        case .write: return Write.wireType
        case .writeBatches: return WriteBatches.wireType
        case .aggregate: return Aggregate.wireType
        }
    }

    /// Every client frame type, for error messages and documentation.
    public static let types = [Hello.wireType, AddTarget.wireType, RemoveTarget.wireType, WriteHandshake.wireType, Write.wireType,
                               WriteBatches.wireType, Aggregate.wireType]

    var frameValue: Value {
        switch self {
        case .hello(let m): return m.frameValue
        case .addTarget(let m): return m.frameValue
        case .removeTarget(let m): return m.frameValue
        case .writeHandshake(let m): return m.frameValue
        case .write(let m): return m.frameValue
        case .writeBatches(let m): return m.frameValue
        case .aggregate(let m): return m.frameValue
        }
    }

    static func read(_ object: WireObject, type: String, limits: FrameLimits) throws(DocError) -> ClientMessage {
        switch type {
        case Hello.wireType: return .hello(try .read(object, limits: limits))
        case AddTarget.wireType: return .addTarget(try .read(object, limits: limits))
        case RemoveTarget.wireType: return .removeTarget(try .read(object, limits: limits))
        case WriteHandshake.wireType: return .writeHandshake(try .read(object, limits: limits))
        case Write.wireType: return .write(try .read(object, limits: limits))
        case WriteBatches.wireType: return .writeBatches(try .read(object, limits: limits))
        case Aggregate.wireType: return .aggregate(try .read(object, limits: limits))
        default:
            throw Wire.error("unknown client message type \"\(type)\" (expected one of \(types.joined(separator: ", ")))", at: "type")
        }
    }
}

extension ClientMessage: Codable {
    public init(from decoder: any Decoder) throws {
        let value = try WireValue(from: decoder).value
        do {
            let object = try WireObject(value, at: "")
            self = try ClientMessage.read(object, type: try object.string("type"), limits: .default)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\(error)", underlyingError: error))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        try WireValue(frameValue).encode(to: encoder)
    }
}
