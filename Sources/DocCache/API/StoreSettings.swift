/// How a ``DocumentStore`` behaves.
public struct StoreSettings: Sendable, Hashable {
    /// The cache may grow to this many bytes before least-recently-used documents that have no
    /// pending writes and belong to no active listener are collected. Default 100 MiB; at least
    /// 1 MiB; ``unlimited`` turns collection off.
    public var cacheSizeBytes: Int64
    /// The largest `limit` a query listener may ask for. Listeners must be bounded: a query
    /// listener without a limit, or above this one, is refused. Default 1,000.
    public var maxListenLimit: Int
    /// The attachments' files may take this many bytes before the least recently used ones
    /// that are on the server (downloaded here, or uploaded from here) are deleted from this
    /// device; they are downloaded again when next read. Attachments not uploaded yet are never
    /// deleted and count towards the total. Default 256 MiB; at least 1 MiB; ``unlimited``
    /// keeps every file.
    public var attachmentCacheSizeBytes: Int64
    /// The largest attachment ``DocumentStore/Attachments/add(file:contentType:)`` accepts.
    /// Default 100 MiB, the server's default limit; a server with a lower limit refuses larger
    /// uploads (the attachment then fails with `invalidArgument`).
    public var maxAttachmentBytes: Int64
    /// Before a write that refers to an attachment uploaded from this device, or downloaded to
    /// it, longer ago than this is sent, the store asks the server whether it still holds the
    /// attachment, and uploads it again from the device's file if not (the server deletes
    /// attachments no document refers to after its grace period, 7 days by default: keep this
    /// well below it). A confirmation stands this
    /// long too, and at least a minute. Default 1 hour; not negative.
    public var attachmentConfirmationAge: Duration

    /// A size limit meaning "no limit".
    public static let unlimited: Int64 = Persistence.unlimited
    /// The default ``cacheSizeBytes``: 100 MiB.
    public static let defaultCacheSizeBytes: Int64 = 100 * 1024 * 1024
    /// The smallest size limit accepted: 1 MiB.
    public static let minimumCacheSizeBytes: Int64 = LRUGarbageCollector.minimumCacheSizeBytes
    /// The default ``attachmentCacheSizeBytes``: 256 MiB.
    public static let defaultAttachmentCacheSizeBytes: Int64 = 256 * 1024 * 1024
    /// The default ``maxAttachmentBytes``: 100 MiB.
    public static let defaultMaxAttachmentBytes: Int64 = 100 * 1024 * 1024
    /// The default ``attachmentConfirmationAge``: 1 hour.
    public static let defaultAttachmentConfirmationAge: Duration = .seconds(3_600)

    /// Settings with the defaults above; each is checked when a store opens with them
    /// (``DocumentStore/open(directory:tenant:user:settings:server:logger:callbackQueue:)``),
    /// which refuses a value
    /// out of range with `invalidArgument`.
    public init(cacheSizeBytes: Int64 = StoreSettings.defaultCacheSizeBytes, maxListenLimit: Int = 1_000,
                attachmentCacheSizeBytes: Int64 = StoreSettings.defaultAttachmentCacheSizeBytes,
                maxAttachmentBytes: Int64 = StoreSettings.defaultMaxAttachmentBytes,
                attachmentConfirmationAge: Duration = StoreSettings.defaultAttachmentConfirmationAge) {
        self.cacheSizeBytes = cacheSizeBytes
        self.maxListenLimit = maxListenLimit
        self.attachmentCacheSizeBytes = attachmentCacheSizeBytes
        self.maxAttachmentBytes = maxAttachmentBytes
        self.attachmentConfirmationAge = attachmentConfirmationAge
    }

    func validate() throws(DocError) {
        try LRUGarbageCollector.validate(cacheSizeLimit: cacheSizeBytes, name: "cacheSizeBytes")
        try LRUGarbageCollector.validate(cacheSizeLimit: attachmentCacheSizeBytes, name: "attachmentCacheSizeBytes")
        if maxAttachmentBytes < 1 {
            throw DocError(.invalidArgument, "maxAttachmentBytes must be at least 1, got \(maxAttachmentBytes)")
        }
        if attachmentConfirmationAge < .zero {
            throw DocError(.invalidArgument, "attachmentConfirmationAge must not be negative, got \(attachmentConfirmationAge)")
        }
        if maxListenLimit < 1 {
            throw DocError(.invalidArgument, "maxListenLimit must be at least 1, got \(maxListenLimit)")
        }
    }
}
