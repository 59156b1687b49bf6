internal import DocModel

/// Reads frames: one JSON object per frame, validated strictly.
///
/// Checks, in order: the frame's size (``FrameLimits/maxFrameBytes``), that it is valid
/// UTF-8 JSON (DocModel's strict reader: no duplicate keys, no trailing data, nesting up to
/// 64), that it is an object with a known `"type"`, and the schema of that type: required
/// fields present, no unknown fields, every field of its type (integers are integers, not
/// `1.0`), ranges, paths (document keys, collection paths, field paths), values (nesting
/// depth; document data through `DocumentLimits` and `Mutation.validate()`), and the limits
/// of ``FrameLimits``. Every failure is a ``FrameError`` holding
/// `DocError(.invalidArgument, …)`.
///
/// A `FrameDecoder` is a value: share one freely.
public struct FrameDecoder: Sendable {
    /// The limits enforced.
    public var limits: FrameLimits

    /// A decoder that enforces `limits`.
    public init(limits: FrameLimits = .default) {
        self.limits = limits
    }

    /// Reads a frame the client sent.
    public func decodeClientMessage(_ bytes: [UInt8]) throws(FrameError) -> ClientMessage {
        let (object, type) = try parse(bytes)
        do {
            return try ClientMessage.read(object, type: type, limits: limits)
        } catch {
            throw FrameError(error, subject: subject(of: object, type: type), frameType: type)
        }
    }

    /// Reads a frame the client sent, from text.
    public func decodeClientMessage(_ text: String) throws(FrameError) -> ClientMessage {
        try decodeClientMessage(Array(text.utf8))
    }

    /// Reads a frame the server sent.
    public func decodeServerMessage(_ bytes: [UInt8]) throws(FrameError) -> ServerMessage {
        let (object, type) = try parse(bytes)
        do {
            return try ServerMessage.read(object, type: type, limits: limits)
        } catch {
            throw FrameError(error, frameType: type)
        }
    }

    /// Reads a frame the server sent, from text.
    public func decodeServerMessage(_ text: String) throws(FrameError) -> ServerMessage {
        try decodeServerMessage(Array(text.utf8))
    }

    /// Size, JSON, object, type.
    private func parse(_ bytes: [UInt8]) throws(FrameError) -> (WireObject, String) {
        guard bytes.count <= limits.maxFrameBytes else {
            throw FrameError(Wire.error("the frame is \(bytes.count) bytes; the limit is \(limits.maxFrameBytes)", at: "frame"))
        }
        let value: Value
        do {
            value = try Value(jsonBytes: bytes)
        } catch {
            throw FrameError(Wire.error(error.message, at: "frame" + (error.location.map { ", \($0)" } ?? "")))
        }
        guard case .map(let members) = value else {
            throw FrameError(Wire.error("a frame is a JSON object, found \(Wire.describe(value))", at: "frame"))
        }
        guard let typeValue = members["type"], !typeValue.isNull else {
            throw FrameError(Wire.error("missing field \"type\"", at: "frame"))
        }
        guard case .string(let type) = typeValue else {
            throw FrameError(Wire.error("expected a string, found \(Wire.describe(typeValue))", at: "type"))
        }
        do {
            return (try WireObject(value, at: type), type)
        } catch {
            throw FrameError(error, frameType: type)
        }
    }

    /// The batch or target a client frame is about, when its ids are readable on their own.
    private func subject(of object: WireObject, type: String) -> FrameError.Subject? {
        switch type {
        case ClientMessage.WriteBatches.wireType:
            // The batch at fault, when one is: the batches before it get no answer.
            return ClientMessage.WriteBatches.culprit(of: object, limits: limits).map { .batch(clientID: $0.clientID, batchID: $0.batchID) }
        case ClientMessage.Write.wireType:
            guard case .string(let clientID)? = object.fields["clientId"],
                  case .integer(let batchID)? = object.fields["batchId"], batchID >= 0,
                  (try? Wire.clientID(clientID, at: "", limits: limits)) != nil
            else { return nil }
            return .batch(clientID: clientID, batchID: Int(batchID))
        case ClientMessage.AddTarget.wireType:
            guard case .integer(let id)? = object.fields["targetId"], let targetID = Int32(exactly: id) else { return nil }
            return .target(targetID)
        default:
            return nil
        }
    }
}
