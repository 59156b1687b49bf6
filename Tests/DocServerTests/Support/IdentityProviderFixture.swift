import DocModel
import Foundation
import JWTKit
import Synchronization
@testable import DocServer

/// A stand-in identity provider for the JWKS tests: real RS256 and ES256 keys, tokens signed
/// with them, and its key set served over HTTP on 127.0.0.1, with the served document, status
/// and `Cache-Control` changeable while it runs (key rotation, outages, malformed answers).
///
/// The key set is served by a ``LoopbackHTTPServer``, on threads of its own, as a real
/// provider is served outside the verifier's process. Served from the cooperative pool, it
/// would answer late whenever other tests hold the pool's two threads, and the verifier's
/// fetch would time out for a reason a real provider never gives.
final class TestIdentityProvider: Sendable {
    static let issuer = "https://id.example.test/acme-app"
    static let audience = "acme-app"

    /// An RSA key generated once for these tests (`openssl genrsa 2048`); test data, not a secret.
    static let rsaPEM = """
-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEArttoeC3zjiot3tvU6HqwZxOlBSj10UMu7lyh0W1kxQZjsK5R
/GQ38U79aAMrq/TZYiEZIUzZsBPGJjpPkwJGv9tEh9gZwyLbu9hKs0xVPCtL4L6Y
MnMDWz1OTebHWpeIYKZbK++A+RAfwq/0BMaO6NTs5QIzOkpCmgnKRSTOkKKd9b7N
jv3ho8Y+u37z+VoCBvDK99emBCHL5L5JA7CnPariZJiB0yfT8UNYEsfNFskM04mn
V9xhuzP8IL//2AKs8BURsDKNhyb4mbKU39IWFGrtE58GlP0ltJArFtEo//w5UNvr
ZJXPOe9wblEtX8hcs9eCMfVT7GNIHQxqsYAa/QIDAQABAoIBAA+yaB4zx9O5Ex2Y
v/PvwaK7N3rvWqPiw1WIEMm/Z4atZGkhuP/ukjwSInsCH9tDs3kU7g/YeYlOOSFI
5khU8bt66FvGiUeEe1PRXqFaZqNsYpcmHP0YaJJ5/ivNnhNSm55LiM84pKwXJ7a/
O2lrVrxtkuebCzS+Ilz4KIWNAJMos+MwAQ0SGH+Qvk2bFu2GJUbEMF0PdXQa/fqC
EL6+Q84u1AwCUfY412ZBz1xjMIz6CZtiQkYYxGPzzpbA/dlPFmrzqR0gvtePQ6ST
H6gvr669lzxERBxbeekPtUFNFRW5DWPqBl32FKlh55tNpRERUltPVrGaRzR5AVMv
MOWTJ4kCgYEA5qPAIEDAJqqPDlxLfL/a8YjkvnX9y4m+u47BR7IvtTPTz48eXS6C
ZK1KuSlTELcs6SpB6tguViZOE5B9SuZKHf55g1bzTQgcCKr1rRTR/mVwWyE6uUgG
xjBNH/FAFk9vycRtXx+lW5KhtPGigk3JD8AEeqrTFUzEOinPRpem7FUCgYEAwhVw
mHAONfT+wgG9Lx411EjafgtkwiPzNYSfMLDlOxPwtvZmmJUp/ii7y3jO/wHHx5GS
PwBpkQ9piNps9C2FnbnJlyAyQO3SuFRaDgRQdN7dPj6Es/cNZtue5bmQDi8A2c9F
pN2m1SsoOW1rgAmHJEiRqUqWDY0hPpFuVFAmnAkCgYEA1zCzgqRHZAxA23o7qFJt
WmyKWDZIrQ6BGggQx+812hBYMNFs2C4b1Qlmraoj6XWu/oHB7Pb1DMZClLh8XlTN
lHypLWUELrxBQ8kW3f2ODJjiovQ3EUZlo6bPXt0+GVLWj1+pWFZzdyQxolzNblxb
G0niI/2cYsQ0VbxKu6elQ90CgYBs4hhT/PGMBdFyyAT5zSoH2YNymTPC0uZcDPY+
G8/OkAZIrv2p9m0joHiS00jVuYr6BEoWvEV9Uzcyxs+/QVanwRY+iZqH4KSKMxB+
sp7soidfBzXtvNkw7l87pBoUSvxgNa9tqcgx6U9cwG1B3JaLnYbSgfyix51x+6b4
+Cpg+QKBgGICQnVUQPfO0gL3gG6k/oxmsnvcI/iHwHFKCGUlkRIkawesQXzfvPqH
yGWjJ1R7ri9zusmbugRTGxbkpr05FAuTDD0P1x4k3F56PNORqaSMsnlMsTMbAoDe
arjPoDGrwkPbniomzV97LWhYj8enR6iX1bz1ABtvyuqQXdeby6Yf
-----END RSA PRIVATE KEY-----
"""

    /// A signing key of the provider.
    struct SigningKey: Sendable {
        let kid: String
        let algorithm: String
        /// The public JWK, as the key set lists it.
        let jwk: [String: String]
        let signer: JWTKeyCollection
    }

    let rsa: SigningKey
    let ec: SigningKey
    /// A key the provider never publishes.
    let stranger: SigningKey

    private struct Served: Sendable {
        var body: String
        var status: Int = 200
        var cacheControl: String?
        var hits = 0
    }
    /// What the server answers, shared with its handler.
    private final class ServedBox: Sendable {
        let state: Mutex<Served>
        init(_ served: Served) { state = Mutex(served) }
        func withLock<T: Sendable>(_ body: (inout sending Served) -> sending T) -> T { state.withLock(body) }
    }
    private let served: ServedBox
    private let server: LoopbackHTTPServer
    /// The URL of the key set.
    let url: URL

    private init(rsa: SigningKey, ec: SigningKey, stranger: SigningKey, served: ServedBox, server: LoopbackHTTPServer) {
        self.rsa = rsa
        self.ec = ec
        self.stranger = stranger
        self.served = served
        self.server = server
        url = URL(string: "http://127.0.0.1:\(server.port)/jwks.json")!
    }

    /// Starts the provider serving a key set with the RSA key only.
    static func start() async throws -> TestIdentityProvider {
        let rsaKey = try Insecure.RSA.PrivateKey(pem: rsaPEM)
        let (n, e) = try rsaKey.publicKey.getKeyPrimitives()
        let rsa = SigningKey(
            kid: "rsa-1", algorithm: "RS256",
            jwk: ["kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256", "n": base64URL(n), "e": base64URL(e)],
            signer: await JWTKeyCollection().add(rsa: rsaKey, digestAlgorithm: .sha256, kid: "rsa-1"))
        let ec = try await ecKey(kid: "ec-2")
        let stranger = try await ecKey(kid: "ec-stranger")

        let served = ServedBox(Served(body: keySet([rsa])))
        let server = try LoopbackHTTPServer { method, target in
            guard method == "GET", target == "/jwks.json" else { return .init(status: 404) }
            let answer = served.withLock { state -> Served in
                state.hits += 1
                return state
            }
            var headers = ["Content-Type": "application/json"]
            if let cacheControl = answer.cacheControl { headers["Cache-Control"] = cacheControl }
            return .init(status: answer.status, headers: headers, body: Array(answer.body.utf8))
        }
        return TestIdentityProvider(rsa: rsa, ec: ec, stranger: stranger, served: served, server: server)
    }

    /// Stops serving the key set: from its return, connections to ``url`` are refused. Safe to
    /// call more than once (a test's own stop, then its `defer`).
    func stop() {
        server.stop()
    }

    /// Serves another document (and status, Cache-Control) from now on.
    func serve(_ body: String, status: Int = 200, cacheControl: String? = nil) {
        served.withLock {
            $0.body = body
            $0.status = status
            $0.cacheControl = cacheControl
        }
    }

    /// Serves the key set of `keys`.
    func publish(_ keys: [SigningKey]) { serve(Self.keySet(keys)) }

    /// How many times the key set has been asked for.
    var hits: Int { served.withLock { $0.hits } }

    /// The settings of a server that trusts this provider.
    func settings(
        tenant: IdentityProvider.TenantSource = .claim("tenant"),
        minimumRefreshInterval: Duration = .zero,
        refreshInterval: Duration = .seconds(3_600),
        cacheFile: String? = nil
    ) throws -> IdentityProvider {
        try IdentityProvider(
            keys: .url(url), issuer: Self.issuer, audiences: [Self.audience], tenant: tenant,
            refreshInterval: refreshInterval, minimumRefreshInterval: minimumRefreshInterval,
            fetchTimeout: .seconds(5), cacheFile: cacheFile)
    }

    /// The claims of a good token for `uid` in tenant `acme`, valid for an hour; `changes`
    /// replace or (with `nil`) remove members.
    static func claims(uid: String = "alice", _ changes: [String: Value?] = [:]) -> [String: Value] {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: Value] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": .string(uid),
            "iat": .integer(now), "exp": .integer(now + 3_600), "tenant": "acme",
        ]
        for (name, value) in changes { claims[name] = value }
        return claims
    }

    /// A token signed by `key`, its header naming the key's id and algorithm.
    static func token(_ key: SigningKey, _ claims: [String: Value]) async throws -> String {
        try await key.signer.sign(AuthRawPayload(members: claims), kid: JWKIdentifier(string: key.kid))
    }

    static func keySet(_ keys: [SigningKey]) -> String {
        let members = keys.map { key in
            "{" + key.jwk.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\($0.value)\"" }.joined(separator: ",") + "}"
        }
        return "{\"keys\":[" + members.joined(separator: ",") + "]}"
    }

    private static func ecKey(kid: String) async throws -> SigningKey {
        let key = ES256PrivateKey()
        guard let parameters = key.publicKey.parameters else { throw DocError(.internal, "no EC parameters") }
        return SigningKey(
            kid: kid, algorithm: "ES256",
            jwk: ["kty": "EC", "kid": kid, "use": "sig", "alg": "ES256", "crv": "P-256", "x": parameters.x, "y": parameters.y],
            signer: await JWTKeyCollection().add(ecdsa: key, kid: JWKIdentifier(string: kid)))
    }
}

/// base64url without padding, as JWTs and JWKs use.
func base64URL(_ bytes: some Sequence<UInt8>) -> String {
    Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}
