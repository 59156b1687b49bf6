/// How the server stores and guards attachments (docs/attachments.md, "Server"), part of the
/// core's ``ServerConfiguration``. Without them the `/attachments` endpoints answer 501
/// `unimplemented` and a write that refers to an attachment is refused.
///
/// ```swift
/// var configuration = ServerConfiguration(rules: rules)
/// configuration.attachments = AttachmentSettings(store: try FileBlobStore(root: dataDirectory + "/attachments"))
/// let core = DocServerCore(store: store, configuration: configuration)
/// ```
public struct AttachmentSettings: Sendable {
    /// Where the bytes live; its ``BlobStore/maxSize`` is the largest upload accepted.
    public var store: any BlobStore
    /// Who may upload and download; `nil` (the default): the server core's security rules
    /// (``RulesAttachmentPolicy``).
    public var policy: (any AttachmentAccessPolicy)?
    /// The size of the chunks a download is streamed in (default 64 KiB).
    public var downloadChunkBytes: Int
    /// How many bytes of an upload's body are gathered before they are written to the store
    /// (default 512 KiB): fewer, larger writes (a statement each on `PostgresBlobStore`, a
    /// `pwrite` each on files). A body that ends or is cut has what arrived written first; a
    /// crash of the server loses at most this much, which the client sends again.
    public var uploadWriteBytes: Int
    /// How long an attachment that no live document refers to is kept, counted from when it
    /// was stored (or, for an unfinished upload, begun), in microseconds (default 7 days).
    /// The collector (``DocServerCore/runMaintenance(sharingEvery:)``) deletes it after that.
    /// It covers a client that uploaded an attachment and has not yet sent the write that
    /// refers to it, for instance because an earlier write of its queue waits for the user.
    public var unreferencedGraceMicros: Int64
    /// The default of ``unreferencedGraceMicros``: 7 days.
    public static let defaultUnreferencedGraceMicros: Int64 = 7 * 24 * 3_600 * 1_000_000

    /// Creates settings; each parameter defaults to the value documented on its property.
    /// Out-of-range values are clamped: the two byte counts to at least 1, the grace to at least 0.
    public init(store: any BlobStore, policy: (any AttachmentAccessPolicy)? = nil, downloadChunkBytes: Int = 64 * 1024,
                uploadWriteBytes: Int = 512 * 1024,
                unreferencedGraceMicros: Int64 = AttachmentSettings.defaultUnreferencedGraceMicros) {
        self.store = store
        self.policy = policy
        self.downloadChunkBytes = max(1, downloadChunkBytes)
        self.uploadWriteBytes = max(1, uploadWriteBytes)
        self.unreferencedGraceMicros = max(0, unreferencedGraceMicros)
    }
}
