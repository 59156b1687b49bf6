import DocModel
import DocProtocol
import DocServer
import Foundation
import JWTKit
import Testing

/// `docctl serve --jwks FILE --issuer … --audience … --tenant …` as a real process: tokens an
/// identity provider's ES256 key signed open connections and write; development (HS256)
/// tokens are refused unless a secret is asked for as well.
@Suite("docctl serve with an identity provider", .serialized)
struct DocctlIdentityProviderTests {
    static let issuer = "https://id.example.test/acme-app"
    static let audience = "acme-app"

    struct Provider {
        let keys: JWTKeyCollection
        let jwksFile: String

        static func make(in directory: String) async throws -> Provider {
            let key = ES256PrivateKey()
            let parameters = try #require(key.publicKey.parameters)
            let jwks = #"{"keys":[{"kty":"EC","crv":"P-256","kid":"ec-1","alg":"ES256","use":"sig","x":"\#(parameters.x)","y":"\#(parameters.y)"}]}"#
            let file = directory + "/jwks.json"
            try jwks.write(toFile: file, atomically: true, encoding: .utf8)
            return Provider(keys: await JWTKeyCollection().add(ecdsa: key, kid: "ec-1"), jwksFile: file)
        }

        func token(uid: String, tenant: String = "acme") async throws -> String {
            let now = Int64(Date().timeIntervalSince1970)
            let claims: [String: Value] = ["iss": .string(DocctlIdentityProviderTests.issuer), "aud": .string(DocctlIdentityProviderTests.audience),
                                           "sub": .string(uid), "iat": .integer(now), "exp": .integer(now + 600), "org": .string(tenant)]
            return try await keys.sign(ClaimsPayload(claims: claims), kid: "ec-1")
        }
    }

    /// A JWT payload of plain JSON claims (strings and integers are all these tests need).
    struct ClaimsPayload: JWTPayload {
        var claims: [String: Value]
        func verify(using algorithm: some JWTAlgorithm) async throws {}
        init(claims: [String: Value]) { self.claims = claims }
        init(from decoder: any Decoder) throws { claims = [:] }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            for (name, value) in claims {
                switch value {
                case .string(let s): try container.encode(s, forKey: Key(name))
                case .integer(let i): try container.encode(i, forKey: Key(name))
                default: break
                }
            }
        }
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(_ string: String) { stringValue = string }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
    }

    /// Starts `docctl serve` with the provider's flags plus `extra`, runs `body`, kills it.
    static func withServer(_ extra: [String], _ body: (String, Provider, DocctlRunner, String) async throws -> Void) async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-idp-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let provider = try await Provider.make(in: base)
        let secret = base + "/secret"
        let docctl = try DocctlRunner(server: "", secret: secret)
        defer { docctl.removeHome() }
        let serve = try docctl.start(["serve", "--port", "0", "--data", base + "/data", "--log-level", "warning",
                                      "--jwks", provider.jwksFile, "--issuer", issuer, "--audience", audience,
                                      "--tenant-claim", "org", "--jwks-cache", base + "/jwks-cache.json"] + extra)
        defer { serve.kill() }
        let line = try #require(await serve.line(0), "serve printed nothing: \(serve.standardError)")
        let url = String(try #require(line.split(separator: " ").last))
        try await body(url, provider, docctl.pointing(at: url), secret)
    }

    static func helloAnswer(_ url: String, token: String) async -> ServerMessage? {
        let socket = RawSocket(url: url)
        defer { Task { await socket.close() } }
        return await socket.hello(token: token)
    }

    @Test func providerTokensWriteAndDevelopmentTokensAreRefused() async throws {
        try await Self.withServer([]) { url, provider, docctl, secretFile in
            let token = try await provider.token(uid: "alice")
            // The token's tenant is in 'org', which only the server reads: docctl is told which
            // tenant's cache to use, and takes the user from 'sub'.
            let unnamed = try await docctl.run(["set", "rooms/r1", #"{"name": "Lobby"}"#, "--server", url, "--token", token])
            #expect(unnamed.status == 2, "\(unnamed)")
            #expect(unnamed.stderr.contains("the token has no 'tenant' claim: say which tenant with --tenant T"), "\(unnamed)")
            let set = try await docctl.run(["set", "rooms/r1", #"{"name": "Lobby"}"#, "--wait", "--server", url, "--token", token, "--tenant", "acme"])
            #expect(set.status == 0, "\(set)")
            let get = try await docctl.run(["get", "rooms/r1", "--source", "server", "--json", "--server", url,
                                            "--token", try await provider.token(uid: "bob"), "--tenant", "acme"])
            #expect(get.status == 0, "\(get)")
            #expect(get.stdout.contains("Lobby"), "\(get)")

            guard case .welcome? = await Self.helloAnswer(url, token: token) else {
                Issue.record("a provider token did not open a connection"); return
            }
            // No secret was asked for: a development token is refused, and no secret file is made.
            let minter = await TokenMinter(secret: try DevelopmentSecret.loadOrCreate(at: secretFile))
            guard case .error(let refused)? = await Self.helloAnswer(url, token: try await minter.mint(tenant: "acme", uid: "dev")) else {
                Issue.record("a development token was not refused"); return
            }
            #expect(refused.error.code == .unauthenticated)
            #expect(refused.error.message.contains("signed with HS256"), "\(refused.error.message)")
            #expect(!FileManager.default.fileExists(atPath: docctl.home + "/.docctl/dev-secret"))
            // The tenant claim of the wrong type: refused, saying so.
            let numeric = try await provider.keys.sign(ClaimsPayload(claims: [
                "iss": .string(Self.issuer), "aud": .string(Self.audience), "sub": "carol",
                "exp": .integer(Int64(Date().timeIntervalSince1970) + 600), "org": 7]), kid: "ec-1")
            guard case .error(let wrongType)? = await Self.helloAnswer(url, token: numeric) else {
                Issue.record("a numeric tenant claim was not refused"); return
            }
            #expect(wrongType.error.message == "token claim 'org' must be one tenant id (a string), not an integer")
        }
    }

    @Test func bothKindsWhenTheSecretIsAskedFor() async throws {
        let secretDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-idp-secret-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: secretDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: secretDirectory) }
        let secret = try DevelopmentSecret.loadOrCreate(at: secretDirectory + "/secret")
        try await Self.withServer(["--secret", secret.path]) { url, provider, _, _ in
            guard case .welcome? = await Self.helloAnswer(url, token: try await provider.token(uid: "alice")) else {
                Issue.record("a provider token did not open a connection"); return
            }
            let devToken = try await TokenMinter(secret: secret).mint(tenant: "acme", uid: "dev")
            guard case .welcome? = await Self.helloAnswer(url, token: devToken) else {
                Issue.record("a development token was refused although --secret was given"); return
            }
        }
    }

    @Test func unusableSettingsStopTheStartWithAClearError() async throws {
        let docctl = try DocctlRunner(server: "", secret: "")
        defer { docctl.removeHome() }
        let missing = try await docctl.run(["serve", "--port", "0", "--data", docctl.home + "/data", "--jwks", docctl.home + "/nope.json",
                                            "--issuer", Self.issuer, "--audience", Self.audience])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("cannot read the JWKS file"), "\(missing)")
        let noIssuer = try await docctl.run(["serve", "--port", "0", "--jwks", "https://id.example.test/jwks"])
        #expect(noIssuer.status != 0)
        #expect(noIssuer.stderr.contains("--jwks needs --issuer"), "\(noIssuer)")
        let stray = try await docctl.run(["serve", "--port", "0", "--issuer", Self.issuer])
        #expect(stray.status != 0)
        #expect(stray.stderr.contains("give --jwks URL|FILE too"), "\(stray)")
    }
}
