#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DocModel

/// The header of a compact JWS, read before any cryptography runs: which algorithm signed the
/// token and with which key.
struct TokenHeader: Sendable, Equatable {
    /// `alg`: `HS256`, `RS256`, `ES256`, …
    var alg: String
    /// `kid`: the key id, when the header names one.
    var kid: String?

    /// Checks the compact JWS shape (three non-empty base64url segments) and reads the header.
    ///
    /// - Throws: `unauthenticated` naming the malformed part.
    init(token: String) throws(DocError) {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw DocError(.unauthenticated,
                           "malformed token: expected three base64url segments separated by '.', "
                               + "found \(segments.count)")
        }
        for (name, segment) in zip(["header", "payload", "signature"], segments) {
            guard !segment.isEmpty else {
                throw DocError(.unauthenticated, "malformed token: its \(name) is empty")
            }
            guard Self.isBase64URL(segment) else {
                throw DocError(.unauthenticated, "malformed token: its \(name) is not base64url")
            }
        }
        struct Fields: Decodable { var alg: String?; var kid: String? }
        let fields: Fields
        do {
            fields = try JSONDecoder().decode(Fields.self, from: Self.base64URLDecode(segments[0]))
        } catch {
            throw DocError(.unauthenticated, "malformed token: its header is not a JSON object")
        }
        guard let alg = fields.alg else {
            throw DocError(.unauthenticated, "malformed token: its header has no 'alg'")
        }
        self.alg = alg
        self.kid = fields.kid
    }

    private static func isBase64URL(_ segment: Substring) -> Bool {
        guard segment.utf8.count % 4 != 1 else { return false }
        return segment.utf8.allSatisfy { b in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
    }

    private static func base64URLDecode(_ segment: Substring) throws -> Data {
        guard case .success(let bytes) = Base64.decodeURLSafe(segment) else {
            throw DocError(.unauthenticated, "malformed token")
        }
        return Data(bytes)
    }
}
