#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DocModel
import JWTKit

/// A coding key for JSON objects whose member names are not known in advance.
struct AuthCodingKey: CodingKey, Hashable {
    var stringValue: String
    var intValue: Int? { nil }

    init(_ string: String) { self.stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// One plain JSON value inside a token payload, carried as a DocModel ``Value``.
///
/// JSON maps onto the JSON-representable part of the value model: `null`, booleans, integers
/// (numbers that fit `Int64` exactly), doubles (every other number), strings, arrays and
/// maps. Token claims are plain JSON: the typed escapes of the document model (`$timestamp`,
/// `$ref`, …) are *not* interpreted, so `{"$ref": "x"}` stays a map with one string member.
struct AuthClaimJSON: Codable {
    var value: Value

    init(_ value: Value) { self.value = value }

    init(from decoder: any Decoder) throws {
        // The payload object itself is one level; a claim may nest `Value.maxDepth` more.
        if decoder.codingPath.count > Value.maxDepth {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath,
                debugDescription: "claim nesting deeper than \(Value.maxDepth) levels"
            ))
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            value = .null
        } else if let b = try? container.decode(Bool.self) {
            value = .boolean(b)
        } else if let i = try? container.decode(Int64.self) {
            value = .integer(i)
        } else if let d = try? container.decode(Double.self) {
            value = .double(d)
        } else if let s = try? container.decode(String.self) {
            value = .string(s)
        } else if let a = try Self.decodeIfType([AuthClaimJSON].self, from: container) {
            value = .array(a.map(\.value))
        } else if let m = try Self.decodeIfType([String: AuthClaimJSON].self, from: container) {
            value = .map(m.mapValues(\.value))
        } else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath, debugDescription: "not a JSON value"
            ))
        }
    }

    /// Decodes `type`, answering `nil` when the JSON has another type, and rethrowing any
    /// other failure (such as nesting that is too deep) from inside it.
    private static func decodeIfType<T: Decodable>(
        _ type: T.Type, from container: any SingleValueDecodingContainer
    ) throws -> T? {
        do {
            return try container.decode(type)
        } catch DecodingError.typeMismatch {
            return nil
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch value {
        case .null: try container.encodeNil()
        case .boolean(let b): try container.encode(b)
        case .integer(let i): try container.encode(i)
        case .double(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a.map(AuthClaimJSON.init))
        case .map(let m): try container.encode(m.mapValues(AuthClaimJSON.init))
        case .timestamp, .bytes, .reference, .attachment, .geoPoint:
            throw EncodingError.invalidValue(value, .init(
                codingPath: encoder.codingPath,
                debugDescription: "\(value.typeName) values cannot be carried in a token"
            ))
        }
    }

    /// Checks that `value` can be written as plain JSON in a token and read back: only null,
    /// booleans, integers, finite doubles, strings, arrays and maps, at most
    /// `Value.maxDepth` levels deep.
    ///
    /// - Throws: `invalidArgument` naming the claim (as a dotted path) and the problem.
    static func validate(_ value: Value, path: String, depth: Int = 1) throws(DocError) {
        guard depth <= Value.maxDepth else {
            throw DocError(.invalidArgument,
                           "claim '\(path)' is nested deeper than \(Value.maxDepth) levels")
        }
        switch value {
        case .null, .boolean, .integer, .string:
            return
        case .double(let d):
            guard d.isFinite else {
                throw DocError(.invalidArgument,
                               "claim '\(path)' is \(d), which JSON cannot represent")
            }
        case .array(let elements):
            for (i, element) in elements.enumerated() {
                try validate(element, path: "\(path)[\(i)]", depth: depth + 1)
            }
        case .map(let members):
            for (key, member) in members {
                try validate(member, path: "\(path).\(key)", depth: depth + 1)
            }
        case .timestamp, .bytes, .reference, .attachment, .geoPoint:
            throw DocError(.invalidArgument,
                           "claim '\(path)' is a \(value.typeName); token claims are plain JSON "
                               + "(null, boolean, number, string, array, map)")
        }
    }
}

/// A whole token payload as an unordered map of plain JSON values, before any claim is
/// interpreted. ``TokenVerifier`` lets jwt-kit check the signature and decode the payload
/// into this, then validates the claims itself so that every failure is a clear ``DocError``.
struct AuthRawPayload: JWTPayload {
    var members: [String: Value]

    init(members: [String: Value]) { self.members = members }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AuthCodingKey.self)
        var members: [String: Value] = [:]
        for key in container.allKeys {
            members[key.stringValue] = try container.decode(AuthClaimJSON.self, forKey: key).value
        }
        self.members = members
    }

    /// Nothing to check here: ``AuthClaims/init(payload:)`` and ``AuthClaims/validate(at:)``
    /// do it after the signature has been verified.
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AuthCodingKey.self)
        for (key, value) in members {
            try container.encode(AuthClaimJSON(value), forKey: AuthCodingKey(key))
        }
    }
}
