#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import DocModel
import JWTKit
public import Logging

/// Verifies bearer tokens: HS256 tokens signed with the server's secret (development, and
/// deployments that mint their own tokens), tokens of an external ``IdentityProvider``
/// (RS256, ES256, … with keys from its JWKS), or both when both are asked for.
///
/// ```swift
/// let secret = try DevelopmentSecret.loadOrCreate()
/// let verifier = try await TokenVerifier(secret: secret)
/// let auth = try await verifier.verify("Bearer eyJhbGciOi…")
/// print(auth.tenant, auth.uid, auth.claims)
/// ```
///
/// The header's `alg` decides which check runs, and each algorithm has exactly one kind of key:
/// `HS256` only the secret, the asymmetric algorithms only the provider's keys. So a token
/// signed with HMAC over the provider's public key (algorithm confusion) is an HS256 token
/// checked against the secret (or refused when there is none), and `alg: none` is refused
/// outright. Every refusal is a ``DocError`` with code `unauthenticated` and a message that
/// says what was wrong; messages never contain the secret or the token.
///
/// The verifier is `Sendable` and cheap to share.
public struct TokenVerifier: Sendable {
    /// The largest token accepted, in bytes (a token with a few claims is a few hundred).
    public static let maxTokenLength = 16 * 1024

    /// The HS256 secret's key, when HS256 tokens are accepted.
    private let secretKeys: JWTKeyCollection?
    /// The identity provider's verifier, when its tokens are accepted.
    private let provider: ProviderTokenVerifier?

    /// Creates a verifier for HS256 tokens signed with `secret`.
    ///
    /// - Throws: `invalidArgument` if the secret is shorter than
    ///   ``DevelopmentSecret/minimumByteCount`` bytes (HS256 needs at least 256 bits).
    public init(secret: [UInt8]) async throws(DocError) {
        secretKeys = try await AuthHS256Keys.make(secret: secret)
        provider = nil
    }

    /// Creates a verifier for tokens signed with a development secret (see
    /// ``DevelopmentSecret``), as `docctl serve` does by default.
    public init(secret: DevelopmentSecret) async {
        // A loaded DevelopmentSecret always has at least the minimum length.
        secretKeys = await AuthHS256Keys.make(validSecret: secret.bytes)
        provider = nil
    }

    /// Creates a verifier for an identity provider's tokens, reading its key set once now.
    ///
    /// - Parameters:
    ///   - identityProvider: the provider: where its keys are, its issuer and audiences, where
    ///     the tenant comes from.
    ///   - secret: also accept HS256 tokens signed with this secret. Leave it `nil` unless the
    ///     deployment really mints tokens of its own as well (`docctl serve --jwks … --secret
    ///     FILE`): the provider's tokens alone is the safe default.
    ///   - logger: where key refreshes and their failures are logged.
    /// - Throws: when the key set cannot be read or has no usable key and no copy from an
    ///   earlier run is kept (``IdentityProvider/cacheFile``): `unavailable` or
    ///   `invalidArgument` with the reason.
    public init(identityProvider: IdentityProvider, secret: DevelopmentSecret? = nil, logger: Logger) async throws(DocError) {
        provider = try await ProviderTokenVerifier.load(identityProvider, logger: logger)
        if let secret {
            secretKeys = await AuthHS256Keys.make(validSecret: secret.bytes)
        } else {
            secretKeys = nil
        }
    }

    /// Verifies a bearer token and returns who it authenticates.
    ///
    /// - Parameter bearer: the raw token (`eyJ…`), or the value of an `Authorization` header
    ///   (`Bearer eyJ…`; the scheme is case-insensitive). Surrounding whitespace is ignored.
    /// - Returns: the tenant, uid, custom claims and expiry of the token, and how long after
    ///   its expiry a connection may stay open (``AuthContext/expiryTolerance``).
    /// - Throws: `unauthenticated` when the token is missing, malformed, uses an algorithm this
    ///   server does not accept, has a bad signature or an unknown key, lacks or has invalid
    ///   claims, has expired or is not yet valid, e.g. `token expired at 2026-01-01T10:00:00Z`.
    public func verify(_ bearer: String) async throws(DocError) -> AuthContext {
        let token = try Self.extractToken(bearer)
        let header = try TokenHeader(token: token)
        switch header.alg {
        case "HS256":
            guard let secretKeys else {
                throw DocError(.unauthenticated,
                               "token is signed with HS256 (a shared secret); this server accepts only "
                                   + "its identity provider's tokens (" + ProviderKeySet.algorithms.sorted().joined(separator: ", ") + ")")
            }
            return try await verifySecretToken(token, keys: secretKeys)
        case let alg where ProviderKeySet.algorithms.contains(alg):
            guard let provider else {
                throw DocError(.unauthenticated,
                               "unsupported token algorithm \(AuthClaims.quoted(alg)); tokens must be HS256 "
                                   + "(this server has no identity provider; see docctl serve --jwks)")
            }
            var auth = try await provider.verify(token, header: header)
            auth.expiryTolerance = provider.provider.clockSkew
            return auth
        case let alg where alg.lowercased() == "none":
            throw DocError(.unauthenticated, "token algorithm 'none' (an unsigned token) is refused")
        case let alg:
            throw DocError(.unauthenticated,
                           "unsupported token algorithm \(AuthClaims.quoted(alg)); tokens must be "
                               + (provider == nil ? "HS256" : (secretKeys == nil ? "" : "HS256 or ")
                                   + ProviderKeySet.algorithms.sorted().joined(separator: ", ")))
        }
    }

    private func verifySecretToken(_ token: String, keys: JWTKeyCollection) async throws(DocError) -> AuthContext {
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
        let trimmed = bearer.trimmingSpaces
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
            let token = parts[1].trimmingSpaces
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

extension Duration {
    /// The duration in seconds, fractions included (token times, timeouts).
    var secondsValue: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
