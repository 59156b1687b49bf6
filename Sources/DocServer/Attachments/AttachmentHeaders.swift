internal import Hummingbird

// The header names of the attachment endpoints (docs/attachments.md, "Server"). Spelled
// through `HTTPFields.Element` (HTTPTypes' `HTTPField`), which Hummingbird exports.
extension HTTPFields.Element.Name {
    /// `Upload-Length`: the attachment's total size in bytes (PUT).
    static let uploadLength = Self("Upload-Length")!
    /// `Upload-Offset`: where the request's body starts in the attachment (PUT; default 0).
    static let uploadOffset = Self("Upload-Offset")!
    /// `X-Content-SHA256`: the attachment's SHA-256 as 64 lowercase hex characters (GET).
    static let contentSHA256 = Self("X-Content-SHA256")!
}
