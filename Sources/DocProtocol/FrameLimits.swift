public import DocModel

/// The bounds ``FrameDecoder`` enforces on incoming frames, beyond the schema.
///
/// Document data is always held to DocModel's `DocumentLimits` (1 MiB per document, nesting
/// depth 20, field paths up to 1,500 bytes); these limits bound the rest of a frame.
public struct FrameLimits: Sendable, Hashable {
    /// The largest frame, in bytes (default 4 MiB).
    public var maxFrameBytes: Int
    /// The most writes in one batch (default 500, as Firestore).
    public var maxWritesPerBatch: Int
    /// The most batches in one `writeBatches` frame, and answers in one `writeResults` frame
    /// (default 500).
    public var maxBatchesPerFrame: Int
    /// The longest resume or stream token, in bytes after base64 decoding (default 1 KiB).
    public var maxTokenBytes: Int
    /// The longest bearer token in a `hello` frame, in UTF-8 bytes (default 16 KiB).
    public var maxAuthTokenBytes: Int
    /// The longest client id, in UTF-8 bytes (default 128).
    public var maxClientIDBytes: Int
    /// The most field filters in one target, composites flattened (default 100).
    public var maxFilters: Int
    /// The most values in an `in`, `not-in` or `array-contains-any` filter (default 30).
    public var maxDisjunctionValues: Int
    /// The most order-bys in one target (default 64).
    public var maxOrderBys: Int
    /// The most target ids in one message (default 10,000).
    public var maxTargetIDs: Int
    /// The largest bitmap of an existence filter's bloom filter, in bytes after base64
    /// decoding (default 1 MiB: 8 million bits, far more than the 1,000 documents of the
    /// largest listener need at a 1 % false-positive rate).
    public var maxBloomFilterBytes: Int
    /// The most hash functions of an existence filter's bloom filter (default 64).
    public var maxBloomFilterHashCount: Int

    /// Creates limits; every parameter defaults to the value documented on its property.
    public init(
        maxFrameBytes: Int = 4 * 1024 * 1024, maxWritesPerBatch: Int = DocumentLimits.maxWritesPerBatch, maxTokenBytes: Int = 1024,
        maxAuthTokenBytes: Int = 16 * 1024, maxClientIDBytes: Int = 128, maxFilters: Int = 100,
        maxDisjunctionValues: Int = 30, maxOrderBys: Int = 64, maxTargetIDs: Int = 10_000,
        maxBloomFilterBytes: Int = 1024 * 1024, maxBloomFilterHashCount: Int = 64, maxBatchesPerFrame: Int = 500
    ) {
        self.maxFrameBytes = maxFrameBytes
        self.maxWritesPerBatch = maxWritesPerBatch
        self.maxBatchesPerFrame = maxBatchesPerFrame
        self.maxTokenBytes = maxTokenBytes
        self.maxAuthTokenBytes = maxAuthTokenBytes
        self.maxClientIDBytes = maxClientIDBytes
        self.maxFilters = maxFilters
        self.maxDisjunctionValues = maxDisjunctionValues
        self.maxOrderBys = maxOrderBys
        self.maxTargetIDs = maxTargetIDs
        self.maxBloomFilterBytes = maxBloomFilterBytes
        self.maxBloomFilterHashCount = maxBloomFilterHashCount
    }

    /// The largest first frame of a connection, which must be `hello`: room for the longest
    /// bearer token twice over and the rest of the frame. A server reads no larger frame before
    /// the caller is known, so decoding an unauthenticated frame costs little.
    public var maxHelloFrameBytes: Int { 2 * maxAuthTokenBytes + maxClientIDBytes + 4 * 1024 }

    /// The defaults.
    public static let `default` = FrameLimits()
}
