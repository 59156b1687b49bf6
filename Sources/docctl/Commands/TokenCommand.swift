import ArgumentParser
import DocModel
import DocServer

/// `docctl token`: a development token signed with the local secret.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a development token (HS256, signed with the local secret file).",
        discussion: """
            Example:
              docctl token --tenant acme --uid alice --claims '{"admin": true}' --ttl 8h

            The secret is the one `docctl serve` verifies with: --secret FILE, else
            $DOCCTL_SECRET, else ~/.docctl/dev-secret (created when missing).
            """
    )

    @Option(help: "The tenant (database) the token is valid for.")
    var tenant: String
    @Option(help: "The user id.")
    var uid: String
    @Option(help: "Custom claims as a JSON object, e.g. '{\"admin\": true}'.")
    var claims: String?
    @Option(help: "How long the token is valid: 90s, 15m, 1h, 7d.")
    var ttl: DurationArgument = DurationArgument(seconds: 3_600)
    @Option(help: "The secret file (env DOCCTL_SECRET; default ~/.docctl/dev-secret).")
    var secret: String?

    func run() async throws {
        let claims = try ClaimsArgument.parse(claims)
        let token = try await DevelopmentToken.mint(tenant: tenant, uid: uid, claims: claims, ttl: ttl.duration, secretFile: secret)
        Output.line(token)
    }
}

/// `--claims JSON`: a JSON object of custom claims.
enum ClaimsArgument {
    static func parse(_ text: String?) throws -> [String: Value] {
        guard let text else { return [:] }
        let value: Value
        do {
            value = try Value(json: text)
        } catch {
            throw ValidationError("--claims is not valid JSON: \(error.message)")
        }
        guard case .map(let claims) = value else { throw ValidationError("--claims must be a JSON object") }
        return claims
    }
}

/// Minting with the development secret, shared by `token` and the client commands.
enum DevelopmentToken {
    static func mint(tenant: String, uid: String, claims: [String: Value], ttl: Duration, secretFile: String?) async throws -> String {
        do {
            let secret = try DevelopmentSecret.loadOrCreate(at: Environment.value(secretFile, "DOCCTL_SECRET"))
            return try await TokenMinter(secret: secret).mint(tenant: tenant, uid: uid, claims: claims, ttl: ttl)
        } catch {
            throw CommandFailure(exitCode: error.code == .invalidArgument ? CommandFailure.usage : CommandFailure.failed,
                                 code: error.code.name, message: error.message)
        }
    }
}
