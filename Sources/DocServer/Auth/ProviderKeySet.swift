import Foundation
import DocModel
import JWTKit

/// The usable signing keys of one JWKS document, by key id.
///
/// Each key is checked before it is used: it must be a public key (no private members), meant
/// for signatures (`use` absent or `sig`), of a type jwt-kit verifies (RSA, EC on P-256,
/// P-384 or P-521, OKP on Ed25519), and its declared `alg` must fit its type. Each key
/// accepts exactly one algorithm (its `alg`, or the one its type implies: RS256 for RSA, the
/// curve's ES algorithm for EC, EdDSA for OKP), so a token cannot make the server use a key
/// with another algorithm than the provider meant (algorithm confusion). Unusable keys are
/// skipped and reported; a set without a usable key is refused.
struct ProviderKeySet: Sendable {
    /// One verification key.
    struct Key: Sendable {
        /// The key id (`kid`), or empty for the only key of a set without ids.
        let id: String
        /// The one algorithm this key verifies (`RS256`, `ES256`, …).
        let algorithm: String
        /// A collection holding only this key, so verification can never fall back to another.
        let collection: JWTKeyCollection
    }

    /// The algorithms a provider token may use: asymmetric signatures only.
    static let algorithms: Set<String> = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                                          "ES256", "ES384", "ES512", "EdDSA"]

    let keys: [String: Key]
    /// Why each skipped key was not used (`key 2 (kid 'x'): use is 'enc'`).
    let skipped: [String]

    /// The key a token names, or the only key when the token names none.
    func key(id: String?) -> Key? {
        if let id { return keys[id] }
        return keys.count == 1 ? keys.values.first : nil
    }

    /// Reads a JWKS document (`{"keys": [ … ]}`).
    ///
    /// - Throws: `invalidArgument` naming the problem when the document is not a JWKS, has more
    ///   than `maxKeys` keys or no usable key (each skipped key with its reason).
    static func parse(_ data: Data, source: String, maxKeys: Int = IdentityProvider.maxKeys) async throws(DocError) -> ProviderKeySet {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: data)
        } catch {
            throw DocError(.invalidArgument, "the JWKS at \(source) is not a JSON object with a 'keys' array of keys")
        }
        guard document.keys.count <= maxKeys else {
            throw DocError(.invalidArgument, "the JWKS at \(source) has \(document.keys.count) keys, more than the \(maxKeys) accepted")
        }
        var keys: [String: Key] = [:]
        var skipped: [String] = []
        let unnamedAllowed = document.keys.count == 1
        for (index, entry) in document.keys.enumerated() {
            let label = "key \(index)" + (entry.info.kid.map { " (kid \(AuthClaims.quoted($0)))" } ?? "")
            switch await usableKey(entry, unnamedAllowed: unnamedAllowed) {
            case .success(let key):
                if keys[key.id] != nil {
                    skipped.append("\(label): the key id is used twice; the first key is kept")
                } else {
                    keys[key.id] = key
                }
            case .failure(let reason):
                skipped.append("\(label): \(reason.message)")
            }
        }
        guard !keys.isEmpty else {
            let reasons = skipped.isEmpty ? "it lists no keys" : skipped.joined(separator: "; ")
            throw DocError(.invalidArgument, "the JWKS at \(source) has no usable signing key: \(reasons)")
        }
        return ProviderKeySet(keys: keys, skipped: skipped)
    }

    private struct Reason: Error { let message: String }

    private static func usableKey(_ entry: Entry, unnamedAllowed: Bool) async -> Result<Key, Reason> {
        let info = entry.info
        guard info.hasPrivateMembers == false else {
            return .failure(Reason(message: "it holds private key material; a JWKS publishes public keys only"))
        }
        if let use = info.use, use != "sig" {
            return .failure(Reason(message: "its use is \(AuthClaims.quoted(use)), not 'sig'"))
        }
        guard info.kid != nil || unnamedAllowed else {
            return .failure(Reason(message: "it has no 'kid', and the set has several keys"))
        }
        guard var jwk = entry.jwk else {
            return .failure(Reason(message: "it is not a JSON Web Key jwt-kit can read (kty \(AuthClaims.quoted(info.kty ?? "none")))"))
        }
        let implied: String
        switch (info.kty, info.crv) {
        case ("RSA", _): implied = "RS256"
        case ("EC", "P-256"): implied = "ES256"
        case ("EC", "P-384"): implied = "ES384"
        case ("EC", "P-521"): implied = "ES512"
        case ("OKP", "Ed25519"): implied = "EdDSA"
        case (let kty, let crv):
            return .failure(Reason(message: "key type \(AuthClaims.quoted(kty ?? "none"))" + (crv.map { " on curve \(AuthClaims.quoted($0))" } ?? "") + " is not supported"))
        }
        let algorithm = info.alg ?? implied
        let fits: Bool
        switch info.kty {
        case "RSA": fits = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"].contains(algorithm)
        default: fits = algorithm == implied
        }
        guard fits else {
            return .failure(Reason(message: "its alg \(AuthClaims.quoted(algorithm)) does not fit a key of type \(info.kty ?? "?")" + (info.crv.map { " on \($0)" } ?? "")))
        }
        guard let jwkAlgorithm = JWK.Algorithm(rawValue: algorithm) else {
            return .failure(Reason(message: "alg \(AuthClaims.quoted(algorithm)) is not supported"))
        }
        jwk.algorithm = jwkAlgorithm
        let collection = JWTKeyCollection()
        do {
            try await collection.add(jwk: jwk.with(keyIdentifier: info.kid ?? ""))
        } catch {
            return .failure(Reason(message: "its key material is invalid (\(error))"))
        }
        return .success(Key(id: info.kid ?? "", algorithm: algorithm, collection: collection))
    }

    /// The JWKS document: each key read twice, as the members this type checks and as a
    /// jwt-kit `JWK` (absent when jwt-kit cannot read it).
    private struct Document: Decodable {
        var keys: [Entry]
    }

    private struct Entry: Decodable {
        var info: KeyInfo
        var jwk: JWK?

        init(from decoder: any Decoder) throws {
            info = try KeyInfo(from: decoder)
            jwk = try? JWK(from: decoder)
        }
    }

    private struct KeyInfo: Decodable {
        var kty: String?
        var kid: String?
        var use: String?
        var alg: String?
        var crv: String?
        var hasPrivateMembers: Bool

        private enum CodingKeys: String, CodingKey {
            case kty, kid, use, alg, crv, d, p, q, dp, dq, qi
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            kty = try? c.decodeIfPresent(String.self, forKey: .kty)
            kid = try? c.decodeIfPresent(String.self, forKey: .kid)
            use = try? c.decodeIfPresent(String.self, forKey: .use)
            alg = try? c.decodeIfPresent(String.self, forKey: .alg)
            crv = try? c.decodeIfPresent(String.self, forKey: .crv)
            hasPrivateMembers = [CodingKeys.d, .p, .q, .dp, .dq, .qi].contains { c.contains($0) }
        }
    }
}

private extension JWK {
    /// The key with `kid` set (jwt-kit files every key of a collection under its id).
    func with(keyIdentifier id: String) -> JWK {
        var copy = self
        copy.keyIdentifier = JWKIdentifier(string: id)
        return copy
    }
}
