import DocCache
import DocModel

/// How attachments are printed by `attach` and `attachments`, for people and as JSON lines
/// (docs/cli.md).
enum AttachmentRendering {
    /// `docctl attach --json`: `{"id":…,"state":…,"size":…,"sha256":…,"contentType":…}`.
    static func summary(_ attachment: Attachment) -> JSONLine {
        .object(summaryFields(attachment))
    }

    /// `docctl attachments --json`: the summary, then `sent`, `createdAt` and `error`.
    static func detail(_ attachment: Attachment) -> JSONLine {
        .object(summaryFields(attachment) + [
            ("sent", .int(sent(attachment))),
            ("createdAt", .string(attachment.createdAt.rfc3339)),
            ("error", failure(of: attachment.state).map { Rendering.error($0) } ?? .null),
        ])
    }

    /// The human line of both commands:
    /// `ID  STATE  SIZE bytes  CONTENT-TYPE`, and `  CODE: MESSAGE` after a failed one.
    static func human(_ attachment: Attachment) -> String {
        var line = "\(attachment.id)  \(state(attachment.state))  \(attachment.size) bytes  \(attachment.contentType)"
        if let error = failure(of: attachment.state) { line += "  \(error.code.name): \(error.message)" }
        return line
    }

    /// A state as a word, with the progress of an upload: `local_only`, `uploading SENT/TOTAL`,
    /// `uploaded`, `failed`.
    static func state(_ state: Attachment.State) -> String {
        if case .uploading(let sent, let total) = state { return "uploading \(sent)/\(total)" }
        return state.name
    }

    /// The bytes the server is known to hold: the progress of an upload, the whole size once
    /// uploaded, 0 otherwise.
    static func sent(_ attachment: Attachment) -> Int64 {
        switch attachment.state {
        case .uploading(let sent, _): return sent
        case .uploaded: return attachment.size
        case .localOnly, .failed: return 0
        }
    }

    /// The server's refusal of a failed upload.
    static func failure(of state: Attachment.State) -> DocError? {
        if case .failed(let error) = state { return error }
        return nil
    }

    private static func summaryFields(_ attachment: Attachment) -> [(String, JSONLine)] {
        [
            ("id", .string(attachment.id.hex)),
            ("state", .string(attachment.state.name)),
            ("size", .int(attachment.size)),
            ("sha256", .string(attachment.sha256)),
            ("contentType", .string(attachment.contentType)),
        ]
    }
}
