// Codable conformances of the value types a document model may hold as properties
// (`var location: GeoPoint`, `var customer: DocumentKey`, …).
//
// DocCache's `DocumentEncoder` / `DocumentDecoder` never call these: they write each type as
// its own `Value` (a timestamp, a geo point, a reference, an attachment). These forms are for
// every other coder (JSONEncoder, a property list), where the types need a portable shape:
// a timestamp as RFC 3339 text, a key as its path, an attachment id as its hex digits, a geo
// point as `{latitude, longitude}`. Decoding validates as the types' initializers do.

extension Timestamp: Codable {
    /// Decodes RFC 3339 text (`2024-05-01T12:00:00.250Z`, up to nanoseconds).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try Timestamp(rfc3339: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.message)
        }
    }

    /// Encodes RFC 3339 text in UTC with as many fractional digits as needed.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rfc3339)
    }
}

extension GeoPoint: Codable {
    private enum CodingKeys: String, CodingKey {
        case latitude, longitude
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let latitude = try container.decode(Double.self, forKey: .latitude)
        let longitude = try container.decode(Double.self, forKey: .longitude)
        do {
            self = try GeoPoint(latitude: latitude, longitude: longitude)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .latitude, in: container, debugDescription: error.message)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(latitude, forKey: .latitude)
        try container.encode(longitude, forKey: .longitude)
    }
}

extension DocumentKey: Codable {
    /// Decodes a document path (`invoices/i1`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try DocumentKey(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.message)
        }
    }

    /// Encodes the document path.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension AttachmentID: Codable {
    /// Decodes the 64 lowercase hexadecimal characters.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try AttachmentID(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.message)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}
