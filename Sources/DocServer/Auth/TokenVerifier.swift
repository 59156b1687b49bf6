#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import DocModel
import JWTKit

/// Verifies doccache bearer tokens: HS256 JWTs signed with the server's secret.
///
/// ```swift
/// let secret = try DevelopmentSecret.loadOrCreate()
/// let verifier = try await TokenVerifier(secret: secret)
/// let auth = try await verifier.verify("Bearer eyJhbGciOi…")
/// print(auth.tenant, auth.uid, auth.claims)
/// ```
///
/// A token is accepted when it is a compact JWS with `"alg": "HS256"`, its signature matches
/// the secret, its claims are valid (``AuthClaims``: one tenant, a uid, an expiry) and it has
/// not expired. Every refusal is a ``DocError`` with code `unauthenticated` and a message
/// that says what was wrong; messages never contain the secret or the token.
///
/// The verifier is `Sendable` and cheap to share: verification runs on jwt-kit's
/// `JWTKeyCollection` actor.
public struct TokenVerifier: Sendable {
    /// The largest token accepted, in bytes (a token with a few claims is a few hundred).
    public static let maxTokenLength = 16 * 1024

    private let keys: JWTKeyCollection

    /// Creates a verifier for HS256 tokens signed with `secret`.
    ///
    /// - Throws: `invalidArgument` if the secret is shorter than
    ///   ``DevelopmentSecret/minimumByteCount`` bytes (HS256 needs at least 256 bits).
    public init(secret: [UInt8]) async throws(DocError) {
        keys = try await AuthHS256Keys.make(secret: secret)
    }

    /// Creates a verifier for tokens signed with a development secret (see
    /// ``DevelopmentSecret``), as `docctl serve` does.
    public init(secret: DevelopmentSecret) async {
        // A loaded DevelopmentSecret always has at least the minimum length.
        keys = await AuthHS256Keys.make(validSecret: secret.bytes)
    }

    /// Verifies a bearer token and returns who it authenticates.
    ///
    /// - Parameter bearer: the raw token (`eyJ…`), or the value of an `Authorization` header
    ///   (`Bearer eyJ…`; the scheme is case-insensitive). Surrounding whitespace is ignored.
    /// - Returns: the tenant, uid, custom claims and expiry of the token.
    /// - Throws: `unauthenticated` when the token is missing, malformed, uses another
    ///   algorithm, has a bad signature, lacks or has invalid claims, has expired or is not yet
    ///   valid, e.g. `token expired at 2026-01-01T10:00:00Z`.
    public func verify(_ bearer: String) async throws(DocError) -> AuthContext {
        let token = try Self.extractToken(bearer)
        try Self.checkStructure(token)

        let raw: AuthRawPayload
        do {
            raw = try await keys.verify(token, as: AuthRawPayload.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw DocError(.unauthenticated,
                           "token signature is invalid: the token was signed with another secret "
                               + "or has been altered")
        } catch let error as JWTError where error.errorType == .malformedToken {
            throw DocError(.unauthenticated,
                           "malformed token: its payload is not a JSON object of claims "
                               + "(or nests deeper than \(Value.maxDepth) levels)")
        } catch let error as JWTError {
            throw DocError(.unauthenticated, "token cannot be verified (\(error.errorType))")
        } catch {
            throw DocError(.unauthenticated, "token cannot be verified")
        }

        let claims = try AuthClaims(payload: raw.members)
        try claims.validate(at: Date())
        return try AuthContext(claims)
    }

    // MARK: Parsing

    /// The token inside a bearer value: `Bearer <token>` or the bare token.
    static func extractToken(_ bearer: String) throws(DocError) -> String {
        let trimmed = AuthText.trimmed(bearer)
        guard !trimmed.isEmpty else {
            throw DocError(.unauthenticated, "missing token: sign in, or pass a bearer token")
        }
        guard trimmed.utf8.count <= maxTokenLength else {
            throw DocError(.unauthenticated,
                           "token is too large: \(trimmed.utf8.count) bytes, at most \(maxTokenLength)")
        }
        let parts = trimmed.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
        if parts.count == 2 {
            let scheme = parts[0]
            guard scheme.lowercased() == "bearer" else {
                throw DocError(.unauthenticated,
                               "unsupported authorization scheme \(AuthClaims.quoted(String(scheme))); "
                                   + "use 'Bearer <token>'")
            }
            let token = AuthText.trimmed(parts[1])
            guard !token.isEmpty else {
                throw DocError(.unauthenticated, "missing token after 'Bearer'")
            }
            return token
        }
        if trimmed.lowercased() == "bearer" {
            throw DocError(.unauthenticated, "missing token after 'Bearer'")
        }
        return trimmed
    }

    /// Checks the compact JWS shape (three base64url segments) and that the header names
    /// HS256, before any cryptography runs.
    static func checkStructure(_ token: String) throws(DocError) {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw DocError(.unauthenticated,
                           "malformed token: expected three base64url segments separated by '.', "
                               + "found \(segments.count)")
        }
        let names = ["header", "payload", "signature"]
        for (name, segment) in zip(names, segments) {
            guard !segment.isEmpty else {
                throw DocError(.unauthenticated, "malformed token: its \(name) is empty")
            }
            guard isBase64URL(segment) else {
                throw DocError(.unauthenticated, "malformed token: its \(name) is not base64url")
            }
        }
        struct Header: Decodable { var alg: String? }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: base64URLDecode(segments[0]))
        } catch {
            throw DocError(.unauthenticated, "malformed token: its header is not a JSON object")
        }
        guard let alg = header.alg else {
            throw DocError(.unauthenticated, "malformed token: its header has no 'alg'")
        }
        guard alg == "HS256" else {
            throw DocError(.unauthenticated,
                           "unsupported token algorithm \(AuthClaims.quoted(alg)); tokens must be HS256")
        }
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
        var base64 = String(segment.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else {
            throw DocError(.unauthenticated, "malformed token")
        }
        return data
    }
}

extension AuthContext {
    /// The context of verified claims.
    init(_ claims: AuthClaims) throws(DocError) {
        self.init(
            tenant: claims.tenant,
            uid: claims.uid,
            claims: claims.custom,
            expiresAt: try AuthClaims.timestamp(claims.exp.value, claim: "exp", code: .unauthenticated),
            issuedAt: try claims.iat.map { (iat) throws(DocError) in
                try AuthClaims.timestamp(iat.value, claim: "iat", code: .unauthenticated)
            }
        )
    }
}

/// Builds the jwt-kit key collections shared by ``TokenVerifier`` and ``TokenMinter``.
enum AuthHS256Keys {
    static func make(secret: [UInt8]) async throws(DocError) -> JWTKeyCollection {
        guard secret.count >= DevelopmentSecret.minimumByteCount else {
            throw DocError(.invalidArgument,
                           "the token secret is too short: \(secret.count) bytes, HS256 needs at "
                               + "least \(DevelopmentSecret.minimumByteCount)")
        }
        return await make(validSecret: secret)
    }

    static func make(validSecret secret: [UInt8]) async -> JWTKeyCollection {
        await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
    }
}

/// Small text helpers for the auth code.
enum AuthText {
    /// `text` without leading and trailing ASCII spaces, tabs, CRs and LFs.
    static func trimmed(_ text: some StringProtocol) -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = text.firstIndex(where: { !isSpace($0) }),
              let last = text.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(text[first...last])
    }
}
