import DocCache
import DocModel
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An open local cache for one command: the user's store, connected to the server.
struct ClientSession {
    let store: DocumentStore
    let options: ClientOptions

    /// Opens the user's cache. A cache is used by one process at a time: when another docctl
    /// holds it, a command waits up to `wait` for it, then fails.
    static func open(_ options: ClientOptions, wait: Duration = .seconds(10)) async throws -> ClientSession {
        let identity = try options.identity()
        let root = options.cacheRoot
        try Directories.create(root)
        let deadline = ContinuousClock.now + wait
        while true {
            do {
                let store = try await openStore(root, identity: identity, options: options)
                return ClientSession(store: store, options: options)
            } catch let error where error.code == .failedPrecondition && error.message.contains("open") {
                guard ContinuousClock.now < deadline else {
                    throw CommandFailure(code: "failedPrecondition",
                        message: "the cache \(root) is in use by another docctl process; wait for it or pass --cache DIR",
                        json: options.json)
                }
                try await Task.sleep(for: .milliseconds(100))
            } catch {
                throw CommandFailure(error, json: options.json)
            }
        }
    }

    private static func openStore(_ directory: String, identity: (tenant: String, uid: String, token: String?),
                                  options: ClientOptions) async throws(DocError) -> DocumentStore {
        let claims = (try? ClaimsArgument.parse(options.claims)) ?? [:]
        let secret = options.secret
        let endpoint = try ServerEndpoint(url: options.serverURL) {
            if let token = identity.token { return token }
            // A fresh development token at every (re)connect: a long listen outlives any ttl.
            return try await DevelopmentToken.mint(tenant: identity.tenant, uid: identity.uid, claims: claims,
                                                   ttl: .seconds(3_600), secretFile: secret)
        }
        return try await DocumentStore.open(directory: directory, tenant: identity.tenant, user: identity.uid, server: endpoint)
    }

    func close() async {
        await store.close()
    }

    /// A library call on the store, its error reported as the command's failure.
    func call<T>(_ body: (DocumentStore) async throws -> T) async throws -> T {
        do {
            return try await body(store)
        } catch {
            throw CommandFailure(error, json: options.json)
        }
    }

    /// Runs `body` with the session and closes it afterwards, also when `body` throws.
    static func with<T>(_ options: ClientOptions, _ body: (ClientSession) async throws -> T) async throws -> T {
        let session = try await open(options)
        do {
            let value = try await body(session)
            await session.close()
            return value
        } catch {
            await session.close()
            throw error
        }
    }
}
