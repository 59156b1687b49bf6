#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import DocModel
import JWTKit

/// Signs development tokens (HS256) that a ``TokenVerifier`` with the same secret accepts;
/// this is what `docctl token` and `docctl --tenant T --uid U` use.
///
/// ```swift
/// let minter = try await TokenMinter(secret: DevelopmentSecret.loadOrCreate())
/// let token = try await minter.mint(tenant: "acme", uid: "alice",
///                                   claims: ["admin": true, "role": "finance"],
///                                   ttl: .seconds(3600))
/// ```
///
/// Production deployments mint tokens in their own identity service with the same claims
/// (see ``AuthClaims``).
public struct TokenMinter: Sendable {
    /// The lifetime of a token when none is given: one hour.
    public static let defaultTTL: Duration = .seconds(3600)

    private let keys: JWTKeyCollection

    /// Creates a minter that signs with `secret`.
    ///
    /// - Throws: `invalidArgument` if the secret is shorter than
    ///   ``DevelopmentSecret/minimumByteCount`` bytes.
    public init(secret: [UInt8]) async throws(DocError) {
        keys = try await AuthHS256Keys.make(secret: secret)
    }

    /// Creates a minter that signs with a development secret (see ``DevelopmentSecret``).
    public init(secret: DevelopmentSecret) async {
        keys = await AuthHS256Keys.make(validSecret: secret.bytes)
    }

    /// Mints a signed token.
    ///
    /// The token carries `tenant`, `uid`, `sub` (= uid), `iat` (now, whole seconds), `exp`
    /// (now + `ttl`, rounded to a whole second away from now) and the custom claims.
    ///
    /// - Parameters:
    ///   - tenant: the one tenant the token is for (see ``AuthClaims/isValidTenant(_:)``).
    ///   - uid: the user id.
    ///   - claims: custom claims, plain JSON values (null, boolean, integer, finite double,
    ///     string, array, map); not one of ``AuthClaims/reservedNames``.
    ///   - ttl: how long the token is valid; zero or negative mints an already-expired token,
    ///     which is useful in tests.
    /// - Returns: the compact JWT (`header.payload.signature`).
    /// - Throws: `invalidArgument` for an invalid tenant, uid, claim or ttl.
    public func mint(
        tenant: String,
        uid: String,
        claims: [String: Value] = [:],
        ttl: Duration = TokenMinter.defaultTTL
    ) async throws(DocError) -> String {
        let now = Date()
        let ttlSeconds = ttl.secondsValue
        let issuedAt = now.timeIntervalSince1970.rounded(.down)
        // Round away from `now`, so a positive ttl is at least ttl long and a zero or
        // negative one is already expired (`exp <= now`).
        let expiresAt = (now.timeIntervalSince1970 + ttlSeconds).rounded(ttlSeconds > 0 ? .up : .down)
        let payload = try AuthClaims(
            tenant: tenant,
            uid: uid,
            expiresAt: Date(timeIntervalSince1970: expiresAt),
            issuedAt: Date(timeIntervalSince1970: issuedAt),
            custom: claims
        )
        do {
            return try await keys.sign(payload)
        } catch {
            // Claims were validated above; this is not expected.
            throw DocError(.internal, "cannot sign the token: \(error)")
        }
    }

    /// Signs an arbitrary payload, valid or not, with no checks: for tests that need tokens
    /// a well-behaved issuer would never produce (missing tenant, wrong claim types, …).
    package func signUnchecked(_ payload: [String: Value]) async throws -> String {
        try await keys.sign(AuthRawPayload(members: payload))
    }
}
