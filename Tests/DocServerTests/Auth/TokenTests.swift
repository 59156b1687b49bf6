import DocModel
import DocServer
import Foundation
import Testing

/// Two different 32-byte secrets.
private let secretA: [UInt8] = (0..<32).map { UInt8($0) &* 7 &+ 1 }
private let secretB: [UInt8] = (0..<32).map { UInt8($0) &* 11 &+ 3 }

/// The error `verify` throws for `token`, or `nil` when it accepts it.
private func rejection(_ verifier: TokenVerifier, _ token: String) async -> DocError? {
    do {
        _ = try await verifier.verify(token)
        return nil
    } catch {
        return error
    }
}

/// A token's payload as JSON text.
private func payloadJSON(of token: String) throws -> String {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    try #require(parts.count == 3)
    let data = try Base64.decodeURLSafe(parts[1]).get()
    return String(decoding: data, as: UTF8.self)
}

/// `token` with its payload replaced by `json` (header and signature kept).
private func replacingPayload(of token: String, with json: String) -> String {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    return [String(parts[0]), base64URL(Array(json.utf8)), String(parts[2])].joined(separator: ".")
}

private var now: Int64 { Int64(Date().timeIntervalSince1970) }

@Suite("Auth tokens")
struct TokenTests {
    @Test("mint → verify keeps tenant, uid and every kind of custom claim")
    func roundTrip() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let claims: [String: Value] = [
            "admin": true,
            "level": 42,
            "ratio": 2.5,
            "role": "finance",
            "nothing": nil,
            "org": ["id": "o-1", "limits": ["max": 10, "soft": false]],
            "groups": ["a", 2, ["nested": true]],
        ]
        let before = now
        let token = try await minter.mint(tenant: "acme", uid: "alice", claims: claims, ttl: .seconds(600))
        let auth = try await verifier.verify(token)

        #expect(auth.tenant == "acme")
        #expect(auth.uid == "alice")
        #expect(auth.claims.keys.sorted() == claims.keys.sorted())
        for (name, value) in claims {
            let got = try #require(auth.claims[name], "claim \(name) missing")
            #expect(got.isIdentical(to: value), "claim \(name): \(got) != \(value)")
        }
        #expect(auth.expiresAt.seconds >= before + 600)
        #expect(auth.expiresAt.seconds <= now + 601)
        let issuedAt = try #require(auth.issuedAt)
        #expect(issuedAt.seconds >= before && issuedAt.seconds <= now)

        // What the rules will see as request.auth.token.
        #expect(auth.token["sub"] == "alice")
        #expect(auth.token["uid"] == "alice")
        #expect(auth.token["tenant"] == "acme")
        #expect(auth.token["exp"]?.isIdentical(to: .integer(auth.expiresAt.seconds)) == true)
        #expect(auth.token["role"] == "finance")
    }

    @Test("the payload on the wire carries tenant, uid, sub, iat, exp as JSON integers")
    func wireFormat() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let token = try await minter.mint(tenant: "acme", uid: "alice", claims: ["admin": true])
        let fields = try Value(json: payloadJSON(of: token))
        let map = try #require(fields.mapValue)
        #expect(map["tenant"] == "acme")
        #expect(map["uid"] == "alice")
        #expect(map["sub"] == "alice")
        #expect(map["admin"] == true)
        let exp = try #require(map["exp"]?.integerValue, "exp is not an integer")
        let iat = try #require(map["iat"]?.integerValue, "iat is not an integer")
        #expect(exp - iat >= 3600 && exp - iat <= 3601, "default ttl is one hour")
        #expect(token.split(separator: ".").count == 3)
        let header = try Base64.decodeURLSafe(token.split(separator: ".")[0]).get()
        #expect(String(decoding: header, as: UTF8.self).contains("\"HS256\""))
    }

    @Test("an Authorization header value is accepted as well as the bare token")
    func bearerForms() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let token = try await minter.mint(tenant: "acme", uid: "bob")
        for form in ["Bearer \(token)", "bearer \(token)", "  BEARER   \(token)\r\n", " \(token) "] {
            let auth = try await verifier.verify(form)
            #expect(auth.uid == "bob", "form: \(form)")
        }
        for bad in ["", "   ", "Bearer", "Bearer   ", "Basic \(token)"] {
            let error = try #require(await rejection(verifier, bad), "accepted \(bad)")
            #expect(error.code == .unauthenticated)
        }
        let basic = try #require(await rejection(verifier, "Basic abc"))
        #expect(basic.message.contains("scheme"))
        let missing = try #require(await rejection(verifier, ""))
        #expect(missing.message.contains("missing token"))
    }

    @Test("an expired token is refused with the time it expired", arguments: [-3600, -1, 0])
    func expired(ttlSeconds: Int) async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let token = try await minter.mint(tenant: "acme", uid: "alice", ttl: .seconds(ttlSeconds))
        let error = try #require(await rejection(verifier, token))
        #expect(error.code == .unauthenticated)
        #expect(error.message.hasPrefix("token expired at "), "\(error)")
        let year = Calendar(identifier: .gregorian).component(.year, from: Date())
        #expect(error.message.contains("\(year)-") || error.message.contains("\(year - 1)-"))
        #expect(error.message.hasSuffix("Z"))
    }

    @Test("a token expired by a crafted exp is refused, one valid for a second more is not")
    func craftedExpiry() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let stale = try await minter.signUnchecked(["tenant": "acme", "uid": "u", "exp": .integer(now - 5)])
        let error = try #require(await rejection(verifier, stale))
        #expect(error.message.hasPrefix("token expired at "))
        let fresh = try await minter.signUnchecked(["tenant": "acme", "uid": "u", "exp": .integer(now + 60)])
        #expect(try await verifier.verify(fresh).uid == "u")
        // A fractional NumericDate is allowed too.
        let fractional = try await minter.signUnchecked(
            ["tenant": "acme", "uid": "u", "exp": .double(Double(now) + 60.5)])
        #expect(try await verifier.verify(fractional).expiresAt.nanos == 500_000_000)
    }

    @Test("a token that is not valid yet (nbf in the future) is refused")
    func notBefore() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let early = try await minter.signUnchecked(
            ["tenant": "acme", "uid": "u", "exp": .integer(now + 600), "nbf": .integer(now + 300)])
        let error = try #require(await rejection(verifier, early))
        #expect(error.code == .unauthenticated)
        #expect(error.message.hasPrefix("token is not valid before "))
        let started = try await minter.signUnchecked(
            ["tenant": "acme", "uid": "u", "exp": .integer(now + 600), "nbf": .integer(now - 1)])
        #expect(try await verifier.verify(started).tenant == "acme")
    }

    @Test("a token signed with another secret is refused, and the message has no secret in it")
    func wrongSecret() async throws {
        let minter = try await TokenMinter(secret: secretB)
        let verifier = try await TokenVerifier(secret: secretA)
        let token = try await minter.mint(tenant: "acme", uid: "alice")
        let error = try #require(await rejection(verifier, token))
        #expect(error.code == .unauthenticated)
        #expect(error.message.contains("signature"))
        for secret in [secretA, secretB] {
            #expect(!error.description.contains(Data(secret).base64EncodedString()))
            #expect(!error.description.contains(base64URL(secret)))
        }
        #expect(!error.description.contains(token), "the token is not echoed either")
    }

    @Test("a tampered payload or signature is refused")
    func tampered() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let token = try await minter.mint(tenant: "tenant-a", uid: "alice", claims: ["admin": false])
        let json = try payloadJSON(of: token)

        // Upgrade the claims, switch the tenant, extend the expiry: all keep the old signature.
        let edits = [
            json.replacingOccurrences(of: "\"admin\":false", with: "\"admin\":true"),
            json.replacingOccurrences(of: "\"tenant-a\"", with: "\"tenant-b\""),
            json.replacingOccurrences(of: "\"exp\":", with: "\"exp\":9"),
        ]
        for edited in edits {
            #expect(edited != json, "the edit changed nothing: \(json)")
            let forged = replacingPayload(of: token, with: edited)
            let error = try #require(await rejection(verifier, forged), "accepted \(edited)")
            #expect(error.code == .unauthenticated)
            #expect(error.message.contains("signature"), "\(error)")
        }

        // Flip one character of the signature.
        var chars = Array(token)
        let i = chars.count - 3
        chars[i] = chars[i] == "A" ? "B" : "A"
        let error = try #require(await rejection(verifier, String(chars)))
        #expect(error.code == .unauthenticated)

        // The untouched token still verifies: the failures above come from the edits.
        #expect(try await verifier.verify(token).tenant == "tenant-a")
    }

    @Test("an unsigned token (alg none) and other algorithms are refused")
    func algorithms() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let token = try await minter.mint(tenant: "acme", uid: "alice")
        let parts = token.split(separator: ".")
        for alg in ["none", "HS512", "RS256"] {
            let header = base64URL(Array(#"{"alg":"\#(alg)","typ":"JWT"}"#.utf8))
            let forged = "\(header).\(parts[1]).\(parts[2])"
            let error = try #require(await rejection(verifier, forged))
            #expect(error.code == .unauthenticated)
            #expect(error.message.contains("algorithm"), "\(error)")
            #expect(error.message.contains(alg))
        }
        let error = try #require(await rejection(verifier, "\(parts[0]).\(parts[1])."))
        #expect(error.message.contains("signature is empty"))
    }

    @Test("malformed tokens are refused with a clear message", arguments: [
        "abc", "a.b", "a.b.c.d", "e30.e30.e30.", "a$b.c.d", "bm90IGpzb24.e30.c2ln", "e30.e30.c2ln",
        "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.c2ln",
    ])
    func malformed(token: String) async throws {
        let verifier = try await TokenVerifier(secret: secretA)
        let error = try #require(await rejection(verifier, token))
        #expect(error.code == .unauthenticated)
        let message = error.message
        #expect(message.contains("malformed") || message.contains("signature"), "\(error)")
    }

    @Test("a correctly signed payload nesting deeper than the value model allows is refused")
    func payloadTooDeep() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let deep = (0..<40).reduce(Value.integer(1)) { inner, _ in .array([inner]) }
        let token = try await minter.signUnchecked(["tenant": "acme", "uid": "u",
                                                    "exp": .integer(now + 60), "deep": deep])
        let error = try #require(await rejection(verifier, token))
        #expect(error.code == .unauthenticated)
        #expect(error.message.contains("malformed"), "\(error)")
    }

    @Test("a token without a tenant, or with anything but one valid tenant id, is refused")
    func tenantClaim() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let exp = Value.integer(now + 600)
        let cases: [(Value?, String)] = [
            (nil, "no 'tenant'"),
            (.string(""), "empty"),
            (.array(["tenant-a", "tenant-b"]), "one tenant id"),
            (.integer(7), "one tenant id"),
            (.string("../tenant-b"), "invalid"),
            (.string("Tenant-A"), "invalid"),
            (.string(String(repeating: "t", count: 64)), "invalid"),
        ]
        for (tenant, expected) in cases {
            var payload: [String: Value] = ["uid": "alice", "exp": exp]
            payload["tenant"] = tenant
            let token = try await minter.signUnchecked(payload)
            let error = try #require(await rejection(verifier, token), "accepted tenant \(String(describing: tenant))")
            #expect(error.code == .unauthenticated)
            #expect(error.message.contains(expected), "\(error)")
        }
    }

    @Test("a token without a uid is refused; sub alone is taken as the uid; uid ≠ sub is refused")
    func uidClaim() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let exp = Value.integer(now + 600)

        let noUID = try await minter.signUnchecked(["tenant": "acme", "exp": exp])
        let missing = try #require(await rejection(verifier, noUID))
        #expect(missing.code == .unauthenticated)
        #expect(missing.message.contains("no 'uid'"))

        let emptyUID = try await minter.signUnchecked(["tenant": "acme", "uid": "", "exp": exp])
        #expect(try #require(await rejection(verifier, emptyUID)).message.contains("empty"))

        let numericUID = try await minter.signUnchecked(["tenant": "acme", "uid": 12, "exp": exp])
        #expect(try #require(await rejection(verifier, numericUID)).message.contains("must be a string"))

        let subOnly = try await minter.signUnchecked(["tenant": "acme", "sub": "carol", "exp": exp])
        #expect(try await verifier.verify(subOnly).uid == "carol")

        let mismatch = try await minter.signUnchecked(["tenant": "acme", "uid": "carol", "sub": "dave", "exp": exp])
        #expect(try #require(await rejection(verifier, mismatch)).message.contains("different users"))
    }

    @Test("a token without exp, or with a non-numeric exp, is refused")
    func expClaim() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let noExp = try await minter.signUnchecked(["tenant": "acme", "uid": "u"])
        #expect(try #require(await rejection(verifier, noExp)).message.contains("no 'exp'"))
        let textExp = try await minter.signUnchecked(["tenant": "acme", "uid": "u", "exp": "tomorrow"])
        #expect(try #require(await rejection(verifier, textExp)).message.contains("'exp' must be a number"))
        let hugeExp = try await minter.signUnchecked(["tenant": "acme", "uid": "u", "exp": 1e300])
        #expect(try #require(await rejection(verifier, hugeExp)).message.contains("outside"))
    }

    @Test("a token for tenant A authenticates tenant A only")
    func tenantIsolation() async throws {
        let minter = try await TokenMinter(secret: secretA)
        let verifier = try await TokenVerifier(secret: secretA)
        let tokenA = try await minter.mint(tenant: "tenant-a", uid: "alice")
        let tokenB = try await minter.mint(tenant: "tenant-b", uid: "alice")
        let authA = try await verifier.verify(tokenA)
        let authB = try await verifier.verify(tokenB)
        #expect(authA.tenant == "tenant-a")
        #expect(authB.tenant == "tenant-b")
        #expect(authA != authB, "same user, different tenants: different contexts")
        // A tenant claim smuggled in as a custom claim cannot change it.
        await #expect(throws: DocError.self) {
            _ = try await minter.mint(tenant: "tenant-a", uid: "alice", claims: ["tenant": "tenant-b"])
        }
    }

    @Test("minting refuses invalid tenants, uids, reserved or non-JSON claims")
    func mintValidation() async throws {
        let minter = try await TokenMinter(secret: secretA)
        func mintError(tenant: String = "acme", uid: String = "alice",
                       claims: [String: Value] = [:]) async -> DocError? {
            do {
                _ = try await minter.mint(tenant: tenant, uid: uid, claims: claims)
                return nil
            } catch {
                return error
            }
        }
        let deep = (0..<25).reduce(Value.integer(1)) { inner, _ in .map(["x": inner]) }
        let cases: [(DocError?, String)] = [
            (await mintError(tenant: ""), "empty"),
            (await mintError(tenant: "a/b"), "invalid"),
            (await mintError(tenant: "-acme"), "invalid"),
            (await mintError(uid: ""), "uid is empty"),
            (await mintError(uid: String(repeating: "u", count: 129)), "longer than 128"),
            (await mintError(claims: ["exp": 1]), "reserved"),
            (await mintError(claims: ["sub": "x"]), "reserved"),
            (await mintError(claims: ["when": .timestamp(try Timestamp(seconds: 0))]), "when"),
            (await mintError(claims: ["blob": .bytes([1, 2])]), "plain JSON"),
            (await mintError(claims: ["x": ["y": .double(.nan)]]), "x.y"),
            (await mintError(claims: ["deep": deep]), "nested deeper"),
        ]
        for (error, expected) in cases {
            let error = try #require(error, "minted a token for the case '\(expected)'")
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(expected), "\(error)")
        }
        // The largest valid names and the deepest valid claim still mint, and verify.
        let verifier = try await TokenVerifier(secret: secretA)
        let deepest = (0..<(Value.maxDepth - 1)).reduce(Value.integer(1)) { inner, _ in .map(["x": inner]) }
        let ok = try await minter.mint(tenant: String(repeating: "a", count: 63),
                                       uid: String(repeating: "u", count: 128),
                                       claims: ["deep": deepest])
        let auth = try await verifier.verify(ok)
        #expect(auth.uid.count == 128)
        #expect(auth.claims["deep"]?.isIdentical(to: deepest) == true)
        let tooDeep = Value.map(["x": deepest])
        #expect(await mintError(claims: ["deep": tooDeep])?.message.contains("nested deeper") == true)
    }

    @Test("secrets shorter than 32 bytes are refused")
    func shortSecret() async throws {
        do {
            _ = try await TokenVerifier(secret: Array(repeating: 1, count: 31))
            Issue.record("the verifier accepted a 31-byte secret")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("too short: 31 bytes"))
        }
        do {
            _ = try await TokenMinter(secret: Array("secret".utf8))
            Issue.record("the minter accepted a 6-byte secret")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("too short: 6 bytes"))
        }
        _ = try await TokenVerifier(secret: Array(repeating: 1, count: 32))
        _ = try await TokenMinter(secret: Array(repeating: 1, count: 32))
    }

    @Test("AuthClaims decodes and validates through Codable like the verifier")
    func claimsCodable() throws {
        let json = #"{"tenant":"acme","uid":"alice","exp":4102444800,"iat":1700000000,"flag":true}"#
        let claims = try JSONDecoder().decode(AuthClaims.self, from: Data(json.utf8))
        #expect(claims.tenant == "acme")
        #expect(claims.uid == "alice")
        #expect(claims.sub.value == "alice")
        #expect(claims.custom == ["flag": true])
        #expect(claims.exp.value == Date(timeIntervalSince1970: 4_102_444_800))
        #expect(throws: Never.self) { try claims.validate(at: Date()) }
        #expect(throws: DocError.self) {
            try claims.validate(at: Date(timeIntervalSince1970: 4_102_444_800))
        }
        let reencoded = try JSONDecoder().decode(AuthClaims.self, from: JSONEncoder().encode(claims))
        #expect(reencoded == claims)

        #expect(throws: DocError.self) {
            _ = try JSONDecoder().decode(AuthClaims.self, from: Data(#"{"uid":"a","exp":1}"#.utf8))
        }
    }
}
