#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import DocModel
public import JWTKit

/// The claims of a doccache bearer token: one tenant, one user, an expiry, and any custom
/// claims the issuer adds.
///
/// On the wire the payload is a JSON object:
///
/// ```json
/// {"tenant": "acme", "uid": "alice", "sub": "alice", "iat": 1767225600, "exp": 1767229200,
///  "admin": true, "role": "finance"}
/// ```
///
/// - `tenant` (required): the one tenant (database) the token is valid for. It is a single
///   string; see ``isValidTenant(_:)`` for the allowed spelling.
/// - `uid` (required): the user id. `sub` (RFC 7519's subject) carries the same value; a
///   token that has only `sub` takes it as the uid, and a token whose `uid` and `sub` differ
///   is refused.
/// - `exp` (required): the expiry, seconds since the Unix epoch.
/// - `iat` (optional): when the token was issued. `nbf` (optional): not valid before.
/// - Every other member is a custom claim, kept as a plain JSON ``Value`` in ``custom``; the
///   rules see them as `request.auth.token.<name>`.
///
/// Validation failures of a received token are `unauthenticated` (see ``TokenVerifier``);
/// building invalid claims with ``init(tenant:uid:expiresAt:issuedAt:notBefore:custom:)``
/// is `invalidArgument`.
public struct AuthClaims: JWTPayload, Sendable, Equatable {
    /// The claim names with a fixed meaning; custom claims cannot use them.
    public static let reservedNames: Set<String> = ["tenant", "uid", "sub", "exp", "iat", "nbf"]

    /// The longest user id accepted, in UTF-8 bytes.
    public static let maxUIDLength = 128

    /// The longest tenant id accepted, in characters.
    public static let maxTenantLength = 63

    /// The tenant (database) this token is valid for.
    public let tenant: String
    /// The authenticated user's id (also written as `sub`).
    public let uid: String
    /// When the token stops being valid.
    public let exp: ExpirationClaim
    /// When the token was issued, if it says.
    public let iat: IssuedAtClaim?
    /// The time before which the token is not valid, if it says.
    public let nbf: NotBeforeClaim?
    /// The custom claims, by name (never one of ``reservedNames``).
    public let custom: [String: Value]

    /// The RFC 7519 subject: the same value as ``uid``.
    public var sub: SubjectClaim { SubjectClaim(value: uid) }

    /// Creates claims for a new token, validating every field.
    ///
    /// - Parameters:
    ///   - tenant: the one tenant the token is for (see ``isValidTenant(_:)``).
    ///   - uid: the user id: 1…``maxUIDLength`` UTF-8 bytes.
    ///   - expiresAt: the expiry; written as whole seconds when it has no fraction.
    ///   - issuedAt: the issue time (`iat`), if any.
    ///   - notBefore: the start of validity (`nbf`), if any.
    ///   - custom: custom claims; plain JSON values only (null, boolean, integer, finite
    ///     double, string, array, map), no reserved names.
    /// - Throws: `invalidArgument` naming the first invalid field.
    public init(
        tenant: String,
        uid: String,
        expiresAt: Date,
        issuedAt: Date? = nil,
        notBefore: Date? = nil,
        custom: [String: Value] = [:]
    ) throws(DocError) {
        try Self.validateTenant(tenant, code: .invalidArgument)
        try Self.validateUID(uid, claim: "uid", code: .invalidArgument)
        for (name, value) in custom {
            guard !Self.reservedNames.contains(name) else {
                throw DocError(.invalidArgument,
                               "custom claim '\(name)' is reserved; reserved claim names are "
                                   + Self.reservedNames.sorted().joined(separator: ", "))
            }
            try AuthClaimJSON.validate(value, path: name)
        }
        for (name, date) in [("exp", expiresAt), ("iat", issuedAt), ("nbf", notBefore)] {
            if let date { _ = try Self.timestamp(date, claim: name, code: .invalidArgument) }
        }
        self.tenant = tenant
        self.uid = uid
        self.exp = ExpirationClaim(value: expiresAt)
        self.iat = issuedAt.map(IssuedAtClaim.init(value:))
        self.nbf = notBefore.map(NotBeforeClaim.init(value:))
        self.custom = custom
    }

    /// Interprets a decoded payload (any JSON object), validating every reserved claim.
    ///
    /// - Throws: `unauthenticated` naming the missing or invalid claim.
    init(payload: [String: Value]) throws(DocError) {
        let code = DocError.Code.unauthenticated
        guard let tenantValue = payload["tenant"] else {
            throw DocError(code, "token has no 'tenant' claim; a token names exactly one tenant")
        }
        guard case .string(let tenant) = tenantValue else {
            throw DocError(code, "token claim 'tenant' must be one tenant id (a string), not "
                               + Self.article(tenantValue.typeName))
        }
        try Self.validateTenant(tenant, code: code)

        let uid: String
        switch (payload["uid"], payload["sub"]) {
        case (nil, nil):
            throw DocError(code, "token has no 'uid' claim (nor 'sub')")
        case (let u?, let s):
            guard case .string(let uidString) = u else {
                throw DocError(code, "token claim 'uid' must be a string, not "
                                   + Self.article(u.typeName))
            }
            if let s, s.stringValue != uidString {
                throw DocError(code, "token claims 'uid' and 'sub' name different users")
            }
            try Self.validateUID(uidString, claim: "uid", code: code)
            uid = uidString
        case (nil, let s?):
            guard case .string(let subString) = s else {
                throw DocError(code, "token claim 'sub' must be a string, not "
                                   + Self.article(s.typeName))
            }
            try Self.validateUID(subString, claim: "sub", code: code)
            uid = subString
        }

        guard let expValue = payload["exp"] else {
            throw DocError(code, "token has no 'exp' claim; tokens must expire")
        }
        let exp = try Self.date(expValue, claim: "exp")
        let iat = try payload["iat"].map { (v) throws(DocError) in try Self.date(v, claim: "iat") }
        let nbf = try payload["nbf"].map { (v) throws(DocError) in try Self.date(v, claim: "nbf") }

        self.tenant = tenant
        self.uid = uid
        self.exp = ExpirationClaim(value: exp)
        self.iat = iat.map(IssuedAtClaim.init(value:))
        self.nbf = nbf.map(NotBeforeClaim.init(value:))
        self.custom = payload.filter { !Self.reservedNames.contains($0.key) }
    }

    /// Checks the time claims against `now`: the token must not have expired (`now < exp`)
    /// and, when it has `nbf`, must already be valid (`nbf <= now`).
    ///
    /// - Throws: `unauthenticated`, e.g. `token expired at 2026-01-01T10:00:00Z`.
    public func validate(at now: Date) throws(DocError) {
        try Self.checkTimes(exp: exp.value, nbf: nbf?.value, iat: nil, at: now, skew: 0)
    }

    /// The time checks every token gets, `skew` seconds of tolerance each way: not expired
    /// (`now < exp + skew`), already valid (`nbf - skew <= now`) and, when `iat` is given, not
    /// issued in the future (`iat - skew <= now`).
    ///
    /// - Throws: `unauthenticated`, e.g. `token expired at 2026-01-01T10:00:00Z`.
    static func checkTimes(exp: Date, nbf: Date?, iat: Date?, at now: Date, skew: Double) throws(DocError) {
        let t = now.timeIntervalSince1970
        guard t < exp.timeIntervalSince1970 + skew else {
            throw DocError(.unauthenticated, "token expired at \(describe(exp))")
        }
        if let nbf, nbf.timeIntervalSince1970 - skew > t {
            throw DocError(.unauthenticated, "token is not valid before \(describe(nbf))")
        }
        if let iat, iat.timeIntervalSince1970 - skew > t {
            throw DocError(.unauthenticated, "token was issued in the future (\(describe(iat))); check the clocks")
        }
    }

    /// Whether `tenant` is a valid tenant id: 1…63 characters of lowercase ASCII letters,
    /// digits, `-` and `_`, starting with a letter or a digit.
    ///
    /// Tenant ids name databases on the server (key prefixes or directories), so the
    /// spelling is kept safe for both: no path separators, no dots, no case-only
    /// differences, nothing that could name another tenant's storage.
    public static func isValidTenant(_ tenant: String) -> Bool {
        let bytes = Array(tenant.utf8)
        guard (1...maxTenantLength).contains(bytes.count) else { return false }
        func isAlnum(_ b: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
        }
        guard isAlnum(bytes[0]) else { return false }
        return bytes.allSatisfy { isAlnum($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    // MARK: JWTPayload

    /// Checks the time claims against the current time (see ``validate(at:)``); jwt-kit calls
    /// this after it has verified the signature.
    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try validate(at: Date())
    }

    /// Decodes and validates a payload; failures are ``DocError``s with code `unauthenticated`.
    public init(from decoder: any Decoder) throws {
        try self.init(payload: AuthRawPayload(from: decoder).members)
    }

    /// Writes `tenant`, `uid`, `sub`, `exp`, `iat` and `nbf` (when present; whole seconds as
    /// JSON integers) and the custom claims.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AuthCodingKey.self)
        for (name, value) in custom {
            try container.encode(AuthClaimJSON(value), forKey: AuthCodingKey(name))
        }
        try container.encode(tenant, forKey: AuthCodingKey("tenant"))
        try container.encode(uid, forKey: AuthCodingKey("uid"))
        try container.encode(uid, forKey: AuthCodingKey("sub"))
        try container.encode(AuthClaimJSON(Self.numericDate(exp.value)), forKey: AuthCodingKey("exp"))
        if let iat {
            try container.encode(AuthClaimJSON(Self.numericDate(iat.value)), forKey: AuthCodingKey("iat"))
        }
        if let nbf {
            try container.encode(AuthClaimJSON(Self.numericDate(nbf.value)), forKey: AuthCodingKey("nbf"))
        }
    }

    // MARK: Helpers

    static func validateTenant(_ tenant: String, code: DocError.Code) throws(DocError) {
        guard isValidTenant(tenant) else {
            if tenant.isEmpty {
                throw DocError(code, "tenant id is empty; a token names exactly one tenant")
            }
            throw DocError(code, "tenant id \(quoted(tenant)) is invalid: use 1…\(maxTenantLength) "
                               + "lowercase letters, digits, '-' or '_', starting with a letter or digit")
        }
    }

    static func validateUID(_ uid: String, claim: String, code: DocError.Code) throws(DocError) {
        guard !uid.isEmpty else {
            throw DocError(code, "\(claim) is empty")
        }
        guard uid.utf8.count <= maxUIDLength else {
            throw DocError(code, "\(claim) is longer than \(maxUIDLength) bytes")
        }
    }

    /// A NumericDate claim (seconds since the epoch, integer or not) as a `Date`, within the
    /// range of ``Timestamp``.
    static func date(_ value: Value, claim: String) throws(DocError) -> Date {
        let seconds: Double
        switch value {
        case .integer(let i): seconds = Double(i)
        case .double(let d): seconds = d
        default:
            throw DocError(.unauthenticated, "token claim '\(claim)' must be a number of seconds "
                               + "since 1970, not " + article(value.typeName))
        }
        let date = Date(timeIntervalSince1970: seconds)
        _ = try timestamp(date, claim: claim, code: .unauthenticated)
        return date
    }

    /// `date` as a ``Timestamp``; outside 0001…9999 (or not finite) is an error with `code`.
    static func timestamp(_ date: Date, claim: String, code: DocError.Code) throws(DocError) -> Timestamp {
        let t = date.timeIntervalSince1970
        guard t.isFinite, t >= Double(Timestamp.minSeconds), t < Double(Timestamp.maxSeconds) + 1 else {
            throw DocError(code, "token claim '\(claim)' is outside the years 0001…9999")
        }
        let whole = t.rounded(.down)
        let nanos = min(Int32(((t - whole) * 1e9).rounded(.down)), 999_999_999)
        do {
            return try Timestamp(seconds: Int64(whole), nanos: nanos)
        } catch {
            throw DocError(code, "token claim '\(claim)' is outside the years 0001…9999")
        }
    }

    /// The JSON form of a NumericDate: an integer when the time has no fraction.
    private static func numericDate(_ date: Date) -> Value {
        let t = date.timeIntervalSince1970
        if t.rounded(.towardZero) == t, let i = Int64(exactly: t) { return .integer(i) }
        return .double(t)
    }

    /// RFC 3339 text for a date (falls back to the raw seconds when out of range).
    static func describe(_ date: Date) -> String {
        if let ts = try? timestamp(date, claim: "", code: .internal) { return ts.rfc3339 }
        return "\(date.timeIntervalSince1970) s since 1970"
    }

    static func article(_ typeName: String) -> String {
        let vowel = typeName.first.map { "aeiou".contains($0) } ?? false
        return (vowel ? "an " : "a ") + typeName
    }

    /// A short, quoted rendering of untrusted text for an error message.
    static func quoted(_ text: String) -> String {
        let limit = 80
        let shown = text.count > limit ? String(text.prefix(limit)) + "…" : text
        return "'" + shown.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F
            ? String($0) : $0.escaped(asASCII: true) }.joined() + "'"
    }
}
