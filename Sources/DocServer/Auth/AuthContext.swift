public import DocModel
internal import DocRules

/// Who is calling: the result of verifying a bearer token with ``TokenVerifier``.
///
/// A connection's tenant comes only from here, so everything it reads or writes stays inside
/// that one tenant.
public struct AuthContext: Sendable, Hashable, CustomStringConvertible {
    /// The one tenant (database) the token is valid for.
    public let tenant: String
    /// The authenticated user's id (`request.auth.uid` in the rules).
    public let uid: String
    /// The custom claims (every payload member except `tenant`, `uid`, `sub`, `exp`, `iat`
    /// and `nbf`), e.g. `["admin": true, "role": "finance"]`.
    public let claims: [String: Value]
    /// When the token expires; a server should stop serving the connection then unless the
    /// client has presented a fresh token.
    public let expiresAt: Timestamp
    /// When the token was issued, if it says (`iat`).
    public let issuedAt: Timestamp?
    /// How long after ``expiresAt`` a connection may stay open: the clock skew the token was
    /// checked with (an identity provider's tokens are accepted that long after `exp`; HS256
    /// tokens are checked without skew, `.zero`). Set by ``TokenVerifier/verify(_:)``.
    public internal(set) var expiryTolerance: Duration = .zero

    /// Creates a context directly, e.g. for tests or for an in-process client that needs no
    /// token.
    public init(
        tenant: String,
        uid: String,
        claims: [String: Value] = [:],
        expiresAt: Timestamp,
        issuedAt: Timestamp? = nil
    ) {
        self.tenant = tenant
        self.uid = uid
        self.claims = claims
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
    }

    /// The token as the rules see it (`request.auth.token`): the custom claims plus
    /// `tenant`, `uid`, `sub` (the uid), `exp` and, when known, `iat` (whole seconds since the
    /// epoch, as Firebase ID tokens carry them).
    public var token: [String: Value] {
        var token = claims
        token["tenant"] = .string(tenant)
        token["uid"] = .string(uid)
        token["sub"] = .string(uid)
        token["exp"] = .integer(expiresAt.seconds)
        if let issuedAt { token["iat"] = .integer(issuedAt.seconds) }
        return token
    }

    /// `tenant/uid`, for logs. Claims are left out: they may hold personal data.
    public var description: String { "\(tenant)/\(uid)" }
}

extension AuthContext {
    /// `request.auth` for this caller's requests.
    var rulesAuth: RulesAuth { RulesAuth(uid: uid, token: token) }
}
