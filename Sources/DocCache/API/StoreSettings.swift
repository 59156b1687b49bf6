/// How a ``DocumentStore`` behaves.
public struct StoreSettings: Sendable, Hashable {
    /// The cache may grow to this many bytes before least-recently-used documents that have no
    /// pending writes and belong to no active listener are collected. Default 100 MiB; at least
    /// 1 MiB; ``unlimited`` turns collection off.
    public var cacheSizeBytes: Int64
    /// The largest `limit` a query listener may ask for. Listeners must be bounded: a query
    /// listener without a limit, or above this one, is refused. Default 1,000.
    public var maxListenLimit: Int

    public static let unlimited: Int64 = -1
    public static let defaultCacheSizeBytes: Int64 = 100 * 1024 * 1024
    public static let minimumCacheSizeBytes: Int64 = 1024 * 1024

    public init(cacheSizeBytes: Int64 = StoreSettings.defaultCacheSizeBytes, maxListenLimit: Int = 1_000) {
        self.cacheSizeBytes = cacheSizeBytes
        self.maxListenLimit = maxListenLimit
    }

    func validate() throws(DocError) {
        if cacheSizeBytes != Self.unlimited && cacheSizeBytes < Self.minimumCacheSizeBytes {
            throw DocError(.invalidArgument,
                "cacheSizeBytes must be at least \(Self.minimumCacheSizeBytes) (1 MiB) or StoreSettings.unlimited, got \(cacheSizeBytes)")
        }
        if maxListenLimit < 1 {
            throw DocError(.invalidArgument, "maxListenLimit must be at least 1, got \(maxListenLimit)")
        }
    }
}
