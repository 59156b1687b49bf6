import Foundation
import DocModel
import Logging

/// The identity provider's current key set, read again when it grows old (in the background,
/// while the old keys keep serving; a failed read is retried after the rate limit) and when a token names a key it does not hold (at most once
/// per ``IdentityProvider/minimumRefreshInterval``, so rotation needs no restart and unknown
/// key ids cannot hammer the provider). A read that fails keeps the keys the store has.
actor ProviderKeyStore {
    private let provider: IdentityProvider
    private let logger: Logger
    private var keySet: ProviderKeySet
    /// When the current key set should be read again.
    private var staleAt: ContinuousClock.Instant
    /// When the key set was last asked for, successfully or not (the rate limit).
    private var lastAttempt: ContinuousClock.Instant
    /// The read under way, which every caller that needs a fresh set waits for.
    private var refreshing: Task<Void, Never>?

    private init(provider: IdentityProvider, keySet: ProviderKeySet, staleAt: ContinuousClock.Instant, logger: Logger) {
        self.provider = provider
        self.keySet = keySet
        self.staleAt = staleAt
        self.lastAttempt = .now
        self.logger = logger
    }

    /// Reads the key set for the first time. When it cannot be read or is not usable and
    /// ``IdentityProvider/cacheFile`` holds a key set from an earlier run, that one serves
    /// (logged as a warning) until a read succeeds.
    ///
    /// - Throws: the read's error (`unavailable`, `invalidArgument`) when there is no usable
    ///   copy to fall back on.
    static func load(_ provider: IdentityProvider, logger: Logger) async throws(DocError) -> ProviderKeyStore {
        do {
            let (keySet, staleAt) = try await read(provider, logger: logger)
            return ProviderKeyStore(provider: provider, keySet: keySet, staleAt: staleAt, logger: logger)
        } catch {
            guard let cacheFile = provider.cacheFile, let data = FileManager.default.contents(atPath: cacheFile),
                  let cached = try? await ProviderKeySet.parse(data, source: cacheFile) else {
                throw error
            }
            logger.warning("the identity provider's keys cannot be read; serving with the copy kept from an earlier run",
                           metadata: ["jwks": "\(provider.keys)", "copy": "\(cacheFile)", "error": "\(error.message)"])
            return ProviderKeyStore(provider: provider, keySet: cached, staleAt: .now, logger: logger)
        }
    }

    /// The key a token names (`kid`), reading the key set again first when the key is unknown
    /// and the last read is older than the rate limit.
    ///
    /// - Throws: `unauthenticated` when the key is not in the set.
    func key(id: String?) async throws(DocError) -> ProviderKeySet.Key {
        if ContinuousClock.now >= staleAt { startRefresh() }
        if let key = keySet.key(id: id) { return key }
        if mayReadAgain || refreshing != nil {
            startRefresh()
            await refreshing?.value
            if let key = keySet.key(id: id) { return key }
        }
        guard let id else {
            throw DocError(.unauthenticated, "token names no key ('kid') and the identity provider has several keys")
        }
        throw DocError(.unauthenticated, "token is signed with key \(AuthClaims.quoted(id)), which the identity provider does not publish")
    }

    private var mayReadAgain: Bool {
        ContinuousClock.now - lastAttempt >= provider.minimumRefreshInterval
    }

    private func startRefresh() {
        guard refreshing == nil else { return }
        lastAttempt = .now
        refreshing = Task { await self.refresh() }
    }

    private func refresh() async {
        defer { refreshing = nil }
        do {
            let (fresh, staleAt) = try await Self.read(provider, logger: logger)
            keySet = fresh
            self.staleAt = staleAt
            logger.debug("read the identity provider's keys", metadata: ["jwks": "\(provider.keys)", "keys": "\(fresh.keys.count)"])
        } catch {
            staleAt = .now + provider.minimumRefreshInterval
            logger.warning("cannot read the identity provider's keys; the keys read before keep serving",
                           metadata: ["jwks": "\(provider.keys)", "error": "\(error.message)"])
        }
    }

    /// One read: fetch, parse, keep a copy in the cache file; and when it goes stale.
    private static func read(_ provider: IdentityProvider, logger: Logger) async throws(DocError) -> (ProviderKeySet, ContinuousClock.Instant) {
        let fetched = try await provider.keys.fetch(maxBytes: IdentityProvider.maxKeySetBytes, timeout: provider.fetchTimeout)
        let keySet = try await ProviderKeySet.parse(fetched.data, source: provider.keys.description)
        for reason in keySet.skipped {
            logger.warning("skipped a key of the identity provider", metadata: ["jwks": "\(provider.keys)", "reason": "\(reason)"])
        }
        if let cacheFile = provider.cacheFile {
            do {
                // The server's own directory (0700), as its other files are.
                if let failed = POSIXFile.makeDirectories(POSIXFile.parent(of: cacheFile)) {
                    throw DocError(.unavailable, "cannot create \(failed.directory): \(String(cString: strerror(failed.errno)))")
                }
                try fetched.data.write(to: URL(fileURLWithPath: cacheFile), options: .atomic)
            } catch {
                logger.warning("cannot keep a copy of the identity provider's keys", metadata: ["copy": "\(cacheFile)", "error": "\(error)"])
            }
        }
        // A provider's max-age is kept within a minute and a day; the configured interval is used as given.
        let lifetime = fetched.maxAge.map { min(max($0, .seconds(60)), .seconds(86_400)) } ?? provider.refreshInterval
        return (keySet, .now + lifetime)
    }
}
