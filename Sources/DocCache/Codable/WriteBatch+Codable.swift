public import DocModel

extension WriteBatch {
    /// Adds a write of `value` as `document`, encoded as
    /// ``DocumentReference/setData(from:merge:encoder:)`` does, and checked at once as
    /// ``setData(_:for:merge:)`` checks.
    ///
    /// - Throws: `invalidArgument` naming the field that cannot be encoded or breaks a limit;
    ///   the batch is unchanged.
    public mutating func setData<T: Encodable>(
        from value: T, for document: DocumentReference, merge: Bool = false, encoder: DocumentEncoder = DocumentEncoder()
    ) throws(DocError) {
        try setData(try encoder.encode(value, for: document.key), for: document, merge: merge)
    }
}
