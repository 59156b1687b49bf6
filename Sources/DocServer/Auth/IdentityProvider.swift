public import DocModel

/// An external identity provider whose tokens the server accepts: Firebase Auth, Auth0,
/// Keycloak, Cognito or any OpenID Connect issuer that signs its tokens with RS256, PS256,
/// ES256 (and their larger variants) or EdDSA and publishes its public keys as a JWKS.
///
/// ```swift
/// let provider = try IdentityProvider(
///     keys: JWKSSource("https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com"),
///     issuer: "https://securetoken.google.com/my-project",
///     audiences: ["my-project"],
///     tenant: .fixed("acme"))
/// let verifier = try await TokenVerifier(identityProvider: provider, logger: logger)
/// ```
///
/// A token is accepted when its header names an asymmetric algorithm and a key (`kid`) of
/// the key set, that key's type and declared algorithm agree with the header, the signature
/// is valid, `iss` equals ``issuer``, `aud` names one of ``audiences``, `exp` is in the
/// future and `nbf`/`iat` are not (each within ``clockSkew``), and `sub` names the user. The
/// tenant comes from ``tenant``. Every other claim reaches the rules as
/// `request.auth.token.<name>` (docs/security.md).
public struct IdentityProvider: Sendable {
    /// Where a connection's tenant comes from.
    public enum TenantSource: Sendable, Hashable, CustomStringConvertible {
        /// A claim of the token: a claim of exactly this name (`tenant`,
        /// `https://acme.example/tenant`), else the dotted path through nested claims
        /// (`firebase.tenant`). It must be one valid tenant id (``AuthClaims/isValidTenant(_:)``).
        case claim(String)
        /// One tenant for every token: a single-tenant deployment.
        case fixed(String)

        public var description: String {
            switch self {
            case .claim(let path): "claim '\(path)'"
            case .fixed(let tenant): "fixed tenant '\(tenant)'"
            }
        }
    }

    /// The largest key set accepted, in bytes (a provider's key set is a few kilobytes).
    public static let maxKeySetBytes = 1 << 20
    /// The most keys a key set may hold.
    public static let maxKeys = 100

    /// Where the public keys are read from.
    public var keys: JWKSSource
    /// The exact `iss` every token must carry.
    public var issuer: String
    /// The accepted `aud` values; a token must name at least one.
    public var audiences: [String]
    /// Where the tenant comes from (default: the claim `tenant`).
    public var tenant: TenantSource
    /// How far the server's clock and the provider's may disagree for `exp`, `nbf` and `iat`
    /// (default 60 s).
    public var clockSkew: Duration
    /// How long a key set is used before it is read again, when the answer does not say
    /// (an answer's `Cache-Control: max-age` is used instead, kept within 1 minute … 24
    /// hours). Default: one hour. The old keys serve while the new ones are read.
    public var refreshInterval: Duration
    /// The shortest time between two reads of the key set: a token with an unknown key reads
    /// it again at most this often (default 30 s), so unknown keys cannot hammer the provider.
    public var minimumRefreshInterval: Duration
    /// How long one read of the key set may take (default 10 s).
    public var fetchTimeout: Duration
    /// A file that keeps the last key set read, so that a server restarted while the provider
    /// cannot be reached keeps accepting tokens signed with the keys it knew. `nil`: no copy.
    public var cacheFile: String?

    /// Describes a provider, checking the settings.
    ///
    /// - Throws: `invalidArgument` for an empty issuer, no audience, an empty audience, an
    ///   invalid fixed tenant, an empty tenant claim path or a negative clock skew.
    public init(
        keys: JWKSSource,
        issuer: String,
        audiences: [String],
        tenant: TenantSource = .claim("tenant"),
        clockSkew: Duration = .seconds(60),
        refreshInterval: Duration = .seconds(3_600),
        minimumRefreshInterval: Duration = .seconds(30),
        fetchTimeout: Duration = .seconds(10),
        cacheFile: String? = nil
    ) throws(DocError) {
        guard !issuer.isEmpty else {
            throw DocError(.invalidArgument, "the identity provider needs an issuer (--issuer): the exact 'iss' of its tokens")
        }
        guard !audiences.isEmpty else {
            throw DocError(.invalidArgument, "the identity provider needs at least one audience (--audience): the 'aud' its tokens carry for this app")
        }
        if audiences.contains(where: \.isEmpty) {
            throw DocError(.invalidArgument, "an audience is empty")
        }
        switch tenant {
        case .fixed(let id):
            try AuthClaims.validateTenant(id, code: .invalidArgument)
        case .claim(let path):
            guard !path.isEmpty, !path.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) else {
                throw DocError(.invalidArgument, "the tenant claim \(AuthClaims.quoted(path)) is not a claim name or dotted path such as 'tenant' or 'firebase.tenant'")
            }
        }
        guard clockSkew >= .zero, minimumRefreshInterval >= .zero, refreshInterval > .zero, fetchTimeout > .zero else {
            throw DocError(.invalidArgument, "the clock skew and the refresh intervals must not be negative, and the refresh interval and fetch timeout must be positive")
        }
        self.keys = keys
        self.issuer = issuer
        self.audiences = audiences
        self.tenant = tenant
        self.clockSkew = clockSkew
        self.refreshInterval = refreshInterval
        self.minimumRefreshInterval = minimumRefreshInterval
        self.fetchTimeout = fetchTimeout
        self.cacheFile = cacheFile
    }
}
