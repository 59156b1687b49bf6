import DocCache
import DocModel

/// The attachments the documents of a `listen` snapshot refer to (`{"$attachment": id}` at any
/// depth), with their state in the listen's own store: `local_only`, `uploading`, `uploaded`,
/// `failed` for an attachment the store has, `remote` for one it has not (added on another
/// device or through another cache, and not downloaded here).
struct ReferencedAttachments: Sendable {
    /// This store's attachments among the references, by id (absent: `remote`).
    private let local: [AttachmentID: Attachment]

    /// No lookups: every reference is `remote`.
    static let none = ReferencedAttachments(local: [:])

    /// Looks up, in `store`, every attachment the `documents` refer to.
    static func lookUp(_ documents: [DocumentSnapshot], in store: DocumentStore) async -> ReferencedAttachments {
        var local: [AttachmentID: Attachment] = [:]
        var asked: Set<AttachmentID> = []
        for document in documents {
            for id in ids(in: document) where asked.insert(id).inserted {
                local[id] = await store.attachments.attachment(id)
            }
        }
        return ReferencedAttachments(local: local)
    }

    /// The ids `document` refers to, each once: map fields in key order, array elements in order.
    static func ids(in document: DocumentSnapshot) -> [AttachmentID] {
        guard let data = document.data() else { return [] }
        var ids: [AttachmentID] = []
        collect(.map(data), into: &ids)
        return ids
    }

    private static func collect(_ value: Value, into ids: inout [AttachmentID]) {
        switch value {
        case .attachment(let id): if !ids.contains(id) { ids.append(id) }
        case .array(let elements): for element in elements { collect(element, into: &ids) }
        case .map(let fields): for key in fields.keys.sorted() { collect(fields[key]!, into: &ids) }
        default: break
        }
    }

    /// The human lines under a document that refers to attachments, one per attachment:
    /// `  attachment ID  STATE` (STATE as `docctl attachments` prints it, `failed: CODE: MESSAGE`
    /// for a failed upload, `remote` for one not on this device). None for other documents.
    func humanLines(for document: DocumentSnapshot) -> [String] {
        Self.ids(in: document).map { id in
            guard let attachment = local[id] else { return "  attachment \(id)  remote" }
            var state = AttachmentRendering.state(attachment.state)
            if let error = AttachmentRendering.failure(of: attachment.state) { state += ": \(error.code.name): \(error.message)" }
            return "  attachment \(id)  \(state)"
        }
    }

    /// The `attachments` field of a `listen --json` change: one object per reference,
    /// `{"id":…,"state":…,"size":…,"sent":…,"error":…}` (`size` and `sent` null for `remote`),
    /// or nil when the document refers to none (the field is then left out).
    func json(for document: DocumentSnapshot) -> JSONLine? {
        let ids = Self.ids(in: document)
        guard !ids.isEmpty else { return nil }
        return .array(ids.map { id in
            guard let attachment = local[id] else {
                return .object([("id", .string(id.hex)), ("state", .string("remote")), ("size", .null), ("sent", .null), ("error", .null)])
            }
            return .object([
                ("id", .string(id.hex)),
                ("state", .string(attachment.state.name)),
                ("size", .int(attachment.size)),
                ("sent", .int(AttachmentRendering.sent(attachment))),
                ("error", AttachmentRendering.failure(of: attachment.state).map { Rendering.error($0) } ?? .null),
            ])
        })
    }
}
