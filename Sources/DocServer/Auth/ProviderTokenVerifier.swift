import Foundation
import DocModel
import JWTKit
import Logging

/// Verifies tokens of an ``IdentityProvider``: the key, the signature, then the claims.
struct ProviderTokenVerifier: Sendable {
    let provider: IdentityProvider
    let keys: ProviderKeyStore

    static func load(_ provider: IdentityProvider, logger: Logger) async throws(DocError) -> ProviderTokenVerifier {
        ProviderTokenVerifier(provider: provider, keys: try await ProviderKeyStore.load(provider, logger: logger))
    }

    func verify(_ token: String, header: TokenHeader, now: Date = Date()) async throws(DocError) -> AuthContext {
        let key = try await keys.key(id: header.kid)
        guard key.algorithm == header.alg else {
            throw DocError(.unauthenticated, "token algorithm \(AuthClaims.quoted(header.alg)) does not match key \(AuthClaims.quoted(key.id)), which is \(key.algorithm)")
        }
        let raw: AuthRawPayload
        do {
            raw = try await key.collection.verify(token, as: AuthRawPayload.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw DocError(.unauthenticated, "token signature is invalid: it was not signed by key \(AuthClaims.quoted(key.id)) or has been altered")
        } catch let error as JWTError where error.errorType == .malformedToken {
            throw DocError(.unauthenticated, "malformed token: its payload is not a JSON object of claims (or nests deeper than \(Value.maxDepth) levels)")
        } catch {
            throw DocError(.unauthenticated, "token cannot be verified with key \(AuthClaims.quoted(key.id))")
        }
        return try context(of: raw.members, now: now)
    }

    /// The caller a verified payload names, after checking `iss`, `aud`, the times, `sub` and
    /// the tenant.
    func context(of payload: [String: Value], now: Date) throws(DocError) -> AuthContext {
        let code = DocError.Code.unauthenticated
        guard case .string(let issuer)? = payload["iss"] else {
            throw DocError(code, "token has no 'iss' claim naming its issuer")
        }
        guard issuer == provider.issuer else {
            throw DocError(code, "token issuer \(AuthClaims.quoted(issuer)) is not the configured issuer \(AuthClaims.quoted(provider.issuer))")
        }
        let audiences: [String]
        switch payload["aud"] {
        case .string(let one)?: audiences = [one]
        case .array(let many)? where many.allSatisfy({ if case .string = $0 { true } else { false } }):
            audiences = many.compactMap(\.stringValue)
        case nil: throw DocError(code, "token has no 'aud' claim naming its audience")
        default: throw DocError(code, "token claim 'aud' must be a string or an array of strings")
        }
        guard audiences.contains(where: provider.audiences.contains) else {
            throw DocError(code, "token audience \(AuthClaims.quoted(audiences.joined(separator: ", "))) is not one this server accepts")
        }

        guard let expValue = payload["exp"] else {
            throw DocError(code, "token has no 'exp' claim; tokens must expire")
        }
        let exp = try AuthClaims.date(expValue, claim: "exp")
        let nbf = try payload["nbf"].map { (v) throws(DocError) in try AuthClaims.date(v, claim: "nbf") }
        let issuedAt = try payload["iat"].map { (v) throws(DocError) in try AuthClaims.date(v, claim: "iat") }
        try AuthClaims.checkTimes(exp: exp, nbf: nbf, iat: issuedAt, at: now, skew: provider.clockSkew.secondsValue)

        guard let subValue = payload["sub"] else {
            throw DocError(code, "token has no 'sub' claim naming the user")
        }
        guard case .string(let uid) = subValue else {
            throw DocError(code, "token claim 'sub' must be a string, not \(AuthClaims.article(subValue.typeName))")
        }
        try AuthClaims.validateUID(uid, claim: "sub", code: code)

        let tenant: String
        switch provider.tenant {
        case .fixed(let id):
            tenant = id
        case .claim(let path):
            // A claim named exactly so first (Auth0's namespaced claims are URLs with dots),
            // then the dotted path through nested maps (Firebase's `firebase.tenant`).
            var value: Value? = payload[path]
            if value == nil {
                value = .map(payload)
                for name in path.split(separator: ".") {
                    guard case .map(let members)? = value else { value = nil; break }
                    value = members[String(name)]
                }
            }
            guard let value else {
                throw DocError(code, "token has no '\(path)' claim naming its tenant")
            }
            guard case .string(let id) = value else {
                throw DocError(code, "token claim '\(path)' must be one tenant id (a string), not \(AuthClaims.article(value.typeName))")
            }
            try AuthClaims.validateTenant(id, code: code)
            tenant = id
        }

        let claims = payload.filter { !AuthClaims.reservedNames.contains($0.key) }
        return AuthContext(
            tenant: tenant,
            uid: uid,
            claims: claims,
            expiresAt: try AuthClaims.timestamp(exp, claim: "exp", code: code),
            issuedAt: try issuedAt.map { (iat) throws(DocError) in try AuthClaims.timestamp(iat, claim: "iat", code: code) }
        )
    }
}
