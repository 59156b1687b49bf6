extension Value {
    /// The attachments this value refers to, at any depth, in order of appearance (repeats
    /// included).
    public func forEachAttachment(_ body: (AttachmentID) -> Void) {
        switch self {
        case .attachment(let id): body(id)
        case .array(let elements): for element in elements { element.forEachAttachment(body) }
        case .map(let fields): for value in fields.values { value.forEachAttachment(body) }
        default: break
        }
    }
}

extension Mutation {
    /// The attachments the mutation writes references to (in its data and in `arrayUnion`
    /// operands), each once. A batch holding one is sent only after the attachment is
    /// uploaded; the server refuses it while the attachment is missing.
    public var attachmentReferences: [AttachmentID] {
        var seen = Set<AttachmentID>()
        var out: [AttachmentID] = []
        let collect: (AttachmentID) -> Void = { if seen.insert($0).inserted { out.append($0) } }
        switch kind {
        case .set(let data), .patch(let data, _): Value.map(data.fields).forEachAttachment(collect)
        case .delete, .tombstone, .verify: break
        }
        for transform in fieldTransforms {
            if case .arrayUnion(let elements) = transform.operation { Value.array(elements).forEachAttachment(collect) }
        }
        return out
    }
}

extension MutationBatch {
    /// The attachments the batch's mutations refer to, each once, in order of appearance.
    public var attachmentReferences: [AttachmentID] {
        var seen = Set<AttachmentID>()
        return mutations.flatMap(\.attachmentReferences).filter { seen.insert($0).inserted }
    }
}
