import ArgumentParser
import DocCache
import DocModel
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The options every client command shares: where the server is, who the user is, where the
/// local cache lives, and the output form.
struct ClientOptions: ParsableArguments {
    @Option(help: "The server (env DOCCTL_SERVER; default http://127.0.0.1:8080).")
    var server: String?
    @Option(help: "A bearer token (env DOCCTL_TOKEN); or use --tenant and --uid.")
    var token: String?
    @Option(help: "The tenant, to mint a development token with the local secret.")
    var tenant: String?
    @Option(help: "The user id, to mint a development token with the local secret.")
    var uid: String?
    @Option(help: "Custom claims of a minted token, as a JSON object.")
    var claims: String?
    @Option(help: "The secret file for minted tokens (env DOCCTL_SECRET; default ~/.docctl/dev-secret).")
    var secret: String?
    @Option(help: "The local cache directory (default ~/.docctl/cache/<server>; one store per tenant and user inside).")
    var cache: String?
    @Flag(help: "Output JSON lines.")
    var json = false

    var serverURL: String { Environment.value(server, "DOCCTL_SERVER") ?? "http://127.0.0.1:8080" }

    func validate() throws {
        if token == nil, Environment.value(nil, "DOCCTL_TOKEN") == nil, tenant == nil || uid == nil {
            throw ValidationError("say who you are: --token JWT (or DOCCTL_TOKEN), or --tenant T --uid U")
        }
        if let tenant, tenant.isEmpty { throw ValidationError("--tenant must not be empty") }
        if let uid, uid.isEmpty { throw ValidationError("--uid must not be empty") }
        _ = try ClaimsArgument.parse(claims)
    }

    /// Who the user is: from --tenant/--uid, else from the token's (unverified) claims. An
    /// identity provider's token may name its user only in `sub` and its tenant in a claim of
    /// another name: then --tenant (and --uid) say it; they name the local cache, the server
    /// decides from the verified token.
    func identity() throws -> (tenant: String, uid: String, token: String?) {
        let explicitToken = Environment.value(token, "DOCCTL_TOKEN")
        if let tenant, let uid, explicitToken == nil { return (tenant, uid, nil) }
        guard let explicitToken else { throw ValidationError("--token or --tenant and --uid are needed") }
        let claims = TokenClaims(explicitToken)
        guard claims != nil || (tenant != nil && uid != nil) else {
            throw ValidationError("the token is not a JWT whose claims can be read: pass --tenant T --uid U with it")
        }
        guard let tenant = tenant ?? claims?.tenant else {
            throw ValidationError("the token has no 'tenant' claim: say which tenant with --tenant T")
        }
        guard let uid = uid ?? claims?.uid else {
            throw ValidationError("the token has no 'uid' or 'sub' claim: say which user with --uid U")
        }
        return (tenant, uid, explicitToken)
    }

    /// The directory the cache of this server lives in (a store per tenant and user inside).
    var cacheRoot: String {
        if let cache { return cache }
        return Environment.home + "/cache/" + Self.folderName(for: serverURL)
    }

    /// A folder name for a server URL: `http://127.0.0.1:8080` → `127.0.0.1_8080`.
    static func folderName(for url: String) -> String {
        var name = url
        for scheme in ["https://", "http://"] where name.hasPrefix(scheme) { name = String(name.dropFirst(scheme.count)) }
        return String(name.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" })
    }
}

/// The `tenant` and `uid` claims of a JWT, read without verifying it (the server verifies).
struct TokenClaims {
    /// `tenant`, when the token has it.
    var tenant: String?
    /// `uid`, else `sub`, when the token has either.
    var uid: String?

    init?(_ token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        guard case .success(let bytes) = Base64.decodeURLSafe(parts[1]), case .map(let claims)? = try? Value(jsonBytes: bytes) else { return nil }
        tenant = claims["tenant"]?.stringValue
        uid = claims["uid"]?.stringValue ?? claims["sub"]?.stringValue
    }
}
