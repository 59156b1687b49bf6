/// How the server stores and guards attachments (docs/attachments.md, "Server"); given to
/// ``DocServerHTTP``. Without it the `/attachments` endpoints answer 501 `unimplemented`.
///
/// ```swift
/// let attachments = AttachmentSettings(store: try FileBlobStore(root: dataDirectory + "/attachments"))
/// let server = DocServerHTTP(core: core, verifier: verifier, attachments: attachments)
/// ```
public struct AttachmentSettings: Sendable {
    /// Where the bytes live; its ``BlobStore/maxSize`` is the largest upload accepted.
    public var store: any BlobStore
    /// Who may upload and download; `nil` (the default): the server core's security rules
    /// (``RulesAttachmentPolicy``).
    public var policy: (any AttachmentAccessPolicy)?
    /// The size of the chunks a download is streamed in (default 64 KiB).
    public var downloadChunkBytes: Int

    public init(store: any BlobStore, policy: (any AttachmentAccessPolicy)? = nil, downloadChunkBytes: Int = 64 * 1024) {
        self.store = store
        self.policy = policy
        self.downloadChunkBytes = max(1, downloadChunkBytes)
    }
}
