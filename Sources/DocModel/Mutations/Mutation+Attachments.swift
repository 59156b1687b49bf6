extension Value {
    /// The attachments this value refers to, at any depth, repeats included: array elements
    /// in order, map fields in no particular order.
    public func forEachAttachment(_ body: (AttachmentID) -> Void) {
        switch self {
        case .attachment(let id): body(id)
        case .array(let elements): for element in elements { element.forEachAttachment(body) }
        case .map(let fields): for value in fields.values { value.forEachAttachment(body) }
        default: break
        }
    }
}

extension Document {
    /// The attachments the document's data refers to, at any depth, repeats included, in no
    /// particular order.
    public func forEachAttachment(_ body: (AttachmentID) -> Void) {
        Value.map(data.fields).forEachAttachment(body)
    }
}

extension Mutation {
    /// The attachments the mutation writes references to (in its data and in `arrayUnion`
    /// operands), each once, in no particular order. A batch holding one is sent only after the attachment is
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
    /// The attachments the batch's mutations refer to, each once, in no particular order.
    public var attachmentReferences: [AttachmentID] {
        var seen = Set<AttachmentID>()
        return mutations.flatMap(\.attachmentReferences).filter { seen.insert($0).inserted }
    }
}
