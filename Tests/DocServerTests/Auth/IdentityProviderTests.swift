import DocModel
import Foundation
import JWTKit
import Logging
import Testing
@testable import DocServer

/// The error `verify` throws for `token`, or `nil` when it accepts it.
private func refusal(_ verifier: TokenVerifier, _ token: String) async -> DocError? {
    do {
        _ = try await verifier.verify(token)
        return nil
    } catch {
        return error
    }
}

private func verifier(_ provider: IdentityProvider, secret: DevelopmentSecret? = nil) async throws -> TokenVerifier {
    try await TokenVerifier(identityProvider: provider, secret: secret, logger: .discarding)
}

/// A compact JWS with `header` and `payload` as given and `signature` as raw bytes.
private func compact(header: String, payload: String, signature: [UInt8]) -> String {
    [Array(header.utf8), Array(payload.utf8), signature]
        .map { base64URL(Data($0)) }
        .joined(separator: ".")
}

private func temporaryPath(_ name: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("doccache-idp-\(UUID().uuidString)-\(name)").path
}

@Suite("Identity provider tokens (JWKS)")
struct IdentityProviderTests {
    @Test("an RS256 token of the provider is accepted: uid from sub, tenant from its claim, every other claim reaches the rules")
    func acceptsProviderToken() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let verifier = try await verifier(idp.settings())
        let token = try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims(["email": "alice@acme.test", "role": "finance"]))
        let auth = try await verifier.verify("Bearer " + token)
        #expect(auth.tenant == "acme")
        #expect(auth.uid == "alice")
        #expect(auth.token["email"] == "alice@acme.test")
        #expect(auth.token["role"] == "finance")
        #expect(auth.token["iss"] == .string(TestIdentityProvider.issuer))
        #expect(auth.token["aud"] == .string(TestIdentityProvider.audience))
        #expect(auth.token["sub"] == "alice")
    }

    @Test("key rotation without restart: key 1 accepted, then the set moves to key 2, which is accepted and key 1 refused")
    func rotation() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let verifier = try await verifier(idp.settings())
        #expect(await refusal(verifier, try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims())) == nil)
        #expect(await refusal(verifier, try await TestIdentityProvider.token(idp.ec, TestIdentityProvider.claims()))?.message.contains("'ec-2'") == true)

        idp.publish([idp.ec])
        let hitsBefore = idp.hits
        #expect(await refusal(verifier, try await TestIdentityProvider.token(idp.ec, TestIdentityProvider.claims())) == nil)
        #expect(idp.hits == hitsBefore + 1, "an unknown key id reads the key set once")
        let old = await refusal(verifier, try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims()))
        #expect(old?.code == .unauthenticated)
        #expect(old?.message.contains("key 'rsa-1', which the identity provider does not publish") == true)
    }

    @Test("a key set that grows old is read again, even when the unknown-key rate limit would not allow it")
    func refreshOnExpiry() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let verifier = try await verifier(idp.settings(minimumRefreshInterval: .seconds(3_600), refreshInterval: .milliseconds(200)))
        idp.publish([idp.rsa, idp.ec])
        try await Task.sleep(for: .milliseconds(300))
        #expect(await refusal(verifier, try await TestIdentityProvider.token(idp.ec, TestIdentityProvider.claims())) == nil)
    }

    @Test("a token signed by an unknown key is refused, and unknown keys read the key set at most once per rate-limit interval")
    func unknownKey() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let verifier = try await verifier(idp.settings(minimumRefreshInterval: .seconds(3_600)))
        let hits = idp.hits
        for _ in 0..<5 {
            let error = await refusal(verifier, try await TestIdentityProvider.token(idp.stranger, TestIdentityProvider.claims()))
            #expect(error?.code == .unauthenticated)
            #expect(error?.message.contains("'ec-stranger'") == true)
        }
        #expect(idp.hits == hits, "within the rate limit no unknown key id reads the key set")
    }

    @Test("wrong issuer, wrong audience, expired, not yet valid, issued in the future and no subject are refused, each saying why")
    func claimChecks() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let verifier = try await verifier(idp.settings())
        let now = Int64(Date().timeIntervalSince1970)
        let cases: [([String: Value?], String)] = [
            (["iss": "https://evil.test"], "issuer 'https://evil.test' is not the configured issuer"),
            (["iss": nil], "no 'iss' claim"),
            (["aud": "other-app"], "audience 'other-app' is not one this server accepts"),
            (["aud": .array(["x", "y"])], "audience 'x, y'"),
            (["aud": 7], "'aud' must be a string or an array of strings"),
            (["exp": .integer(now - 120)], "token expired at"),
            (["exp": nil], "no 'exp' claim"),
            (["nbf": .integer(now + 600)], "not valid before"),
            (["iat": .integer(now + 600)], "issued in the future"),
            (["sub": nil], "no 'sub' claim"),
            (["sub": 12], "'sub' must be a string, not an integer"),
        ]
        for (changes, expected) in cases {
            let error = await refusal(verifier, try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims(changes)))
            #expect(error?.code == .unauthenticated, "\(changes)")
            #expect(error?.message.contains(expected) == true, "\(changes): \(error?.message ?? "accepted")")
        }
        // An audience list naming this app is fine; so are times within the clock skew (60 s).
        for changes: [String: Value?] in [["aud": .array(["other", .string(TestIdentityProvider.audience)])],
                                          ["exp": .integer(now - 20)], ["nbf": .integer(now + 20)], ["iat": .integer(now + 20)]] {
            #expect(await refusal(verifier, try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims(changes))) == nil, "\(changes)")
        }
    }

    @Test("the tenant: a claim of the wrong type or an invalid id is refused; a dotted claim path and a fixed tenant work")
    func tenantMapping() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let byClaim = try await verifier(idp.settings())
        let number = await refusal(byClaim, try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims(["tenant": 42])))
        #expect(number?.message == "token claim 'tenant' must be one tenant id (a string), not an integer")
        let list = await refusal(byClaim, try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims(["tenant": .array(["a", "b"])])))
        #expect(list?.message.contains("not an array") == true)
        let invalid = await refusal(byClaim, try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims(["tenant": "../other"])))
        #expect(invalid?.message.contains("is invalid") == true)
        let missing = await refusal(byClaim, try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims(["tenant": nil])))
        #expect(missing?.message == "token has no 'tenant' claim naming its tenant")

        let nested = try await verifier(idp.settings(tenant: .claim("firebase.tenant")))
        let firebase = try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims(["tenant": nil, "firebase": .map(["tenant": "tenant-7"])]))
        #expect(try await nested.verify(firebase).tenant == "tenant-7")

        let namespaced = try await verifier(idp.settings(tenant: .claim("https://acme.example/tenant")))
        let auth0 = try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims(["tenant": nil, "https://acme.example/tenant": "tenant-8"]))
        #expect(try await namespaced.verify(auth0).tenant == "tenant-8")

        let fixed = try await verifier(idp.settings(tenant: .fixed("solo")))
        #expect(try await fixed.verify(try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims(["tenant": nil]))).tenant == "solo")
        #expect(throws: DocError.self) { try idp.settings(tenant: .fixed("Not Valid")) }
        #expect(throws: DocError.self) { try idp.settings(tenant: .claim("a..b")) }
    }

    @Test("alg none, HS256 signed with the provider's public key (algorithm confusion) and a header naming another key's algorithm are refused")
    func algorithmAttacks() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let payload = String(decoding: try JSONEncoder().encode(AuthRawPayload(members: TestIdentityProvider.claims())), as: UTF8.self)

        let unsigned = compact(header: #"{"alg":"none","typ":"JWT"}"#, payload: payload, signature: [0])
        let publicPEM = try Insecure.RSA.PrivateKey(pem: TestIdentityProvider.rsaPEM).publicKey.pemRepresentation
        let confused = try await JWTKeyCollection().add(hmac: HMACKey(from: Array(publicPEM.utf8)), digestAlgorithm: .sha256, kid: "rsa-1")
            .sign(AuthRawPayload(members: TestIdentityProvider.claims()), kid: "rsa-1")
        // The RSA key's id in a header claiming ES256, signed by an EC key: the key fixes the algorithm.
        let mismatched = try await idp.ec.signer.sign(AuthRawPayload(members: TestIdentityProvider.claims()),
                                                      header: JWTHeader(fields: ["kid": .string("rsa-1"), "alg": .string("ES256")]))

        let providerOnly = try await verifier(idp.settings())
        #expect(await refusal(providerOnly, unsigned)?.message == "token algorithm 'none' (an unsigned token) is refused")
        #expect(await refusal(providerOnly, confused)?.message.contains("token is signed with HS256 (a shared secret); this server accepts only its identity provider's tokens") == true)
        #expect(await refusal(providerOnly, mismatched)?.message == "token algorithm 'ES256' does not match key 'rsa-1', which is RS256")

        // With the development secret asked for as well, HS256 is checked against that secret
        // only, never against the provider's keys.
        let secret = try DevelopmentSecret.loadOrCreate(at: temporaryPath("secret"))
        let both = try await verifier(idp.settings(), secret: secret)
        #expect(await refusal(both, confused)?.message.contains("token signature is invalid") == true)
        #expect(await refusal(both, unsigned)?.code == .unauthenticated)
        let devToken = try await TokenMinter(secret: secret).mint(tenant: "acme", uid: "dev")
        #expect(try await both.verify(devToken).uid == "dev")
        let providerToken = try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims())
        #expect(try await both.verify(providerToken).uid == "alice")
        // A connection outlives its token's `exp` by the provider's clock skew for provider
        // tokens only: HS256 tokens are checked without skew.
        #expect(try await both.verify(providerToken).expiryTolerance == .seconds(60))
        #expect(try await both.verify("Bearer " + providerToken).expiryTolerance == .seconds(60))
        #expect(try await both.verify(devToken).expiryTolerance == .zero)
        // Without the secret, a development token is refused.
        #expect(await refusal(providerOnly, devToken)?.code == .unauthenticated)
    }

    @Test("a tampered payload fails the signature check")
    func tamperedPayload() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let verifier = try await verifier(idp.settings())
        let token = try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims())
        let parts = token.split(separator: ".")
        let forged = String(decoding: try JSONEncoder().encode(AuthRawPayload(members: TestIdentityProvider.claims(uid: "mallory"))), as: UTF8.self)
        let tampered = [String(parts[0]), base64URL(Data(forged.utf8)), String(parts[2])].joined(separator: ".")
        #expect(await refusal(verifier, tampered)?.message.contains("token signature is invalid") == true)
    }

    @Test("bad key sets: unreachable, HTTP 500, malformed, too large, only private or encryption keys — clear errors at start")
    func badKeySets() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        func startError() async -> DocError? {
            do {
                _ = try await verifier(idp.settings())
                return nil
            } catch {
                return error as? DocError
            }
        }
        idp.serve("{}", status: 500)
        #expect(await startError()?.message.contains("HTTP 500") == true)
        idp.serve("this is not json")
        #expect(await startError()?.message.contains("is not a JSON object with a 'keys' array") == true)
        idp.serve("{\"keys\": 7}")
        #expect(await startError()?.code == .invalidArgument)
        idp.serve("{\"keys\":[" + String(repeating: "{\"kty\":\"RSA\",\"kid\":\"pad\",\"n\":\"AQAB\",\"e\":\"AQAB\"},", count: 30_000) + "{}]}")
        #expect(await startError()?.message.contains("more than the 1048576 a key set may have") == true)
        var privateJWK = idp.rsa.jwk
        privateJWK["d"] = "AQAB"
        var encryption = idp.ec.jwk
        encryption["use"] = "enc"
        idp.serve(TestIdentityProvider.keySet([.init(kid: "p", algorithm: "RS256", jwk: privateJWK, signer: idp.rsa.signer),
                                              .init(kid: "e", algorithm: "ES256", jwk: encryption, signer: idp.ec.signer)]))
        let unusable = await startError()
        #expect(unusable?.message.contains("no usable signing key") == true)
        #expect(unusable?.message.contains("private key material") == true)
        #expect(unusable?.message.contains("its use is 'enc'") == true)
        var wrongAlg = idp.ec.jwk
        wrongAlg["alg"] = "RS256"
        idp.serve(TestIdentityProvider.keySet([.init(kid: "w", algorithm: "RS256", jwk: wrongAlg, signer: idp.ec.signer)]))
        #expect(await startError()?.message.contains("does not fit a key of type EC") == true)

        // A usable key beside unusable ones: the usable one serves.
        idp.serve(TestIdentityProvider.keySet([.init(kid: "e", algorithm: "ES256", jwk: encryption, signer: idp.ec.signer), idp.rsa]))
        let mixed = try await verifier(idp.settings())
        #expect(await refusal(mixed, try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims())) == nil)
    }

    @Test("the provider unreachable at start: a clear error, or with a kept copy of its keys the server serves with them")
    func unreachableAtStart() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let cache = temporaryPath("jwks-cache.json")
        defer { try? FileManager.default.removeItem(atPath: cache) }
        _ = try await verifier(idp.settings(cacheFile: cache))
        #expect(FileManager.default.fileExists(atPath: cache), "a successful read keeps a copy")
        let token = try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims())
        let settings = try idp.settings(cacheFile: cache)
        idp.stop()

        do {
            _ = try await verifier(try idp.settings())
            Issue.record("started without reaching the provider and without a copy")
        } catch let error as DocError {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("cannot read the JWKS at \(idp.url.absoluteString)"))
        }
        let fromCopy = try await verifier(settings)
        #expect(try await fromCopy.verify(token).uid == "alice")
    }

    @Test("a JWKS file is read, and read again when a token names a key it did not have")
    func keysFromFile() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let path = temporaryPath("jwks.json")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try TestIdentityProvider.keySet([idp.rsa]).write(toFile: path, atomically: true, encoding: .utf8)
        let provider = try IdentityProvider(keys: JWKSSource(path), issuer: TestIdentityProvider.issuer,
                                            audiences: [TestIdentityProvider.audience], minimumRefreshInterval: .zero)
        let verifier = try await verifier(provider)
        #expect(await refusal(verifier, try await TestIdentityProvider.token(idp.rsa, TestIdentityProvider.claims())) == nil)
        try TestIdentityProvider.keySet([idp.rsa, idp.ec]).write(toFile: path, atomically: true, encoding: .utf8)
        #expect(await refusal(verifier, try await TestIdentityProvider.token(idp.ec, TestIdentityProvider.claims())) == nil)
    }

    @Test("settings and sources: Cache-Control max-age, URL or file, invalid settings refused")
    func settingsAndSources() throws {
        #expect(JWKSSource.maxAge(inCacheControl: "public, max-age=19845, must-revalidate, no-transform") == .seconds(19_845))
        #expect(JWKSSource.maxAge(inCacheControl: "no-store") == nil)
        #expect(try JWKSSource("https://example.test/jwks") == .url(URL(string: "https://example.test/jwks")!))
        #expect(try JWKSSource("/etc/doccache/jwks.json") == .file("/etc/doccache/jwks.json"))
        #expect(throws: DocError.self) { try JWKSSource("") }
        #expect(throws: DocError.self) { try IdentityProvider(keys: .file("x"), issuer: "", audiences: ["a"]) }
        #expect(throws: DocError.self) { try IdentityProvider(keys: .file("x"), issuer: "i", audiences: []) }
        #expect(throws: DocError.self) { try IdentityProvider(keys: .file("x"), issuer: "i", audiences: ["a"], clockSkew: .seconds(-1)) }
    }
}
