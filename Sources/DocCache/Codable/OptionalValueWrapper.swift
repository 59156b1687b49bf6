/// What ``DocumentID`` and ``ServerTimestamp`` share: a property wrapper around an optional
/// that other coders (`JSONEncoder`) see as that optional, and whose field may be absent from
/// a document (it then decodes as nil, in any decoder).
public protocol OptionalValueWrapper: Codable {
    associatedtype Wrapped: Codable
    var wrappedValue: Wrapped? { get }
    init(wrappedValue: Wrapped?)
}

extension OptionalValueWrapper {
    /// The wrapper holding nil: what a missing field decodes as.
    static var absent: Self { Self(wrappedValue: nil) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self.init(wrappedValue: container.decodeNil() ? nil : try container.decode(Wrapped.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension KeyedDecodingContainer {
    /// A wrapped property (``DocumentID``, ``ServerTimestamp``) whose field is absent decodes
    /// as nil instead of failing; the synthesized `init(from:)` of a model calls this overload.
    public func decode<W: OptionalValueWrapper>(_ type: W.Type, forKey key: Key) throws -> W {
        try decodeIfPresent(type, forKey: key) ?? W(wrappedValue: nil)
    }
}
