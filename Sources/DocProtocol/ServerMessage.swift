internal import DocModel

/// A frame the server sends: one JSON object whose `"type"` names the message.
///
/// Watch messages follow Firestore's Listen protocol: a target is acknowledged with a
/// ``TargetChange`` `added`, its documents follow as ``DocumentChange``s, then `current`
/// with a resume token; later commits arrive as document changes, deletes and removes. The
/// client applies what it collected only at a global snapshot: a `noChange` target change
/// with no target ids and a ``TargetChange/snapshotVersion``.
public enum ServerMessage: Sendable, Hashable {
    /// `welcome`: the handshake succeeded.
    case welcome(Welcome)
    /// `targetChange`: the state of targets changed, or a global snapshot.
    case targetChange(TargetChange)
    /// `documentChange`: a document entered, changed in, or left targets.
    case documentChange(DocumentChange)
    /// `documentDelete`: a document was deleted (hard delete).
    case documentDelete(DocumentDelete)
    /// `documentRemove`: a document left targets without being deleted.
    case documentRemove(DocumentRemove)
    /// `existenceFilter`: the number of documents in a target.
    case existenceFilter(ExistenceFilter)
    /// `writeHandshake`: the write stream is open.
    case writeHandshake(WriteHandshakeResponse)
    /// `writeResult`: a batch was committed.
    case writeResult(WriteResult)
    /// `writeError`: a batch was rejected.
    case writeError(WriteError)
    /// `writeResults`: the answers to a `writeBatches` frame.
    case writeResults(WriteResults)
    /// `error`: a frame could not be processed, or the connection is closing.
    case error(StreamError)
    /// `aggregateResult`: the answer to an `aggregate` request.
    case aggregateResult(AggregateResult)

    /// The frame's `"type"`.
    public var type: String {
        switch self {
        case .welcome: return Welcome.wireType
        case .targetChange: return TargetChange.wireType
        case .documentChange: return DocumentChange.wireType
        case .documentDelete: return DocumentDelete.wireType
        case .documentRemove: return DocumentRemove.wireType
        case .existenceFilter: return ExistenceFilter.wireType
        case .writeHandshake: return WriteHandshakeResponse.wireType
        case .writeResult: return WriteResult.wireType
        case .writeError: return WriteError.wireType
        case .writeResults: return WriteResults.wireType
        case .error: return StreamError.wireType
        case .aggregateResult: return AggregateResult.wireType
        }
    }

    /// Every server frame type.
    public static let types = [
        Welcome.wireType, TargetChange.wireType, DocumentChange.wireType, DocumentDelete.wireType,
        DocumentRemove.wireType, ExistenceFilter.wireType, WriteHandshakeResponse.wireType, WriteResult.wireType,
        WriteError.wireType, WriteResults.wireType, StreamError.wireType, AggregateResult.wireType,
    ]

    var frameValue: Value {
        switch self {
        case .welcome(let m): return m.frameValue
        case .targetChange(let m): return m.frameValue
        case .documentChange(let m): return m.frameValue
        case .documentDelete(let m): return m.frameValue
        case .documentRemove(let m): return m.frameValue
        case .existenceFilter(let m): return m.frameValue
        case .writeHandshake(let m): return m.frameValue
        case .writeResult(let m): return m.frameValue
        case .writeError(let m): return m.frameValue
        case .writeResults(let m): return m.frameValue
        case .error(let m): return m.frameValue
        case .aggregateResult(let m): return m.frameValue
        }
    }

    static func read(_ object: WireObject, type: String, limits: FrameLimits) throws(DocError) -> ServerMessage {
        switch type {
        case Welcome.wireType: return .welcome(try .read(object, limits: limits))
        case TargetChange.wireType: return .targetChange(try .read(object, limits: limits))
        case DocumentChange.wireType: return .documentChange(try .read(object, limits: limits))
        case DocumentDelete.wireType: return .documentDelete(try .read(object, limits: limits))
        case DocumentRemove.wireType: return .documentRemove(try .read(object, limits: limits))
        case ExistenceFilter.wireType: return .existenceFilter(try .read(object, limits: limits))
        case WriteHandshakeResponse.wireType: return .writeHandshake(try .read(object, limits: limits))
        case WriteResult.wireType: return .writeResult(try .read(object, limits: limits))
        case WriteError.wireType: return .writeError(try .read(object, limits: limits))
        case WriteResults.wireType: return .writeResults(try .read(object, limits: limits))
        case StreamError.wireType: return .error(try .read(object, limits: limits))
        case AggregateResult.wireType: return .aggregateResult(try .read(object, limits: limits))
        default:
            throw Wire.error("unknown server message type \"\(type)\" (expected one of \(types.joined(separator: ", ")))", at: "type")
        }
    }
}

extension ServerMessage: Codable {
    public init(from decoder: any Decoder) throws {
        let value = try WireValue(from: decoder).value
        do {
            let object = try WireObject(value, at: "")
            self = try ServerMessage.read(object, type: try object.string("type"), limits: .default)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\(error)", underlyingError: error))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        try WireValue(frameValue).encode(to: encoder)
    }
}
