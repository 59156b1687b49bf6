internal import DocModel

/// A message type's wire form: its `type` name, its members, and how to read it back.
protocol WireMessage: Sendable {
    /// The frame's `"type"`.
    static var wireType: String { get }
    /// Every member a frame of this type may have besides `"type"`.
    static var wireFieldNames: Set<String> { get }
    /// The members, `nil` for absent optional ones.
    var wireFields: [(String, Value?)] { get }
    /// Reads the message from its frame object (whose `"type"` was checked), validating it.
    init(wire object: WireObject, limits: FrameLimits) throws(DocError)
}

extension WireMessage {
    /// The whole frame as a value: `{"type": …, …members}`.
    var frameValue: Value {
        Wire.object([("type", .string(Self.wireType))] + wireFields)
    }

    /// Reads a frame object of this type, rejecting unknown members.
    static func read(_ object: WireObject, limits: FrameLimits) throws(DocError) -> Self {
        try object.allowOnly(wireFieldNames, and: "type")
        return try Self(wire: object, limits: limits)
    }
}

/// `Codable` for messages, through ``WireValue``: a message encodes as its frame object.
enum WireCoding {
    static func encode(_ message: some WireMessage, to encoder: any Encoder) throws {
        try WireValue(message.frameValue).encode(to: encoder)
    }

    static func decode<M: WireMessage>(_ type: M.Type, from decoder: any Decoder) throws -> M {
        let value = try WireValue(from: decoder).value
        do {
            let object = try WireObject(value, at: M.wireType)
            let name = try object.string("type")
            guard name == M.wireType else {
                throw Wire.error("expected a \"\(M.wireType)\" frame, found \"\(name)\"", at: "type")
            }
            return try M.read(object, limits: .default)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\(error)", underlyingError: error))
        }
    }
}
