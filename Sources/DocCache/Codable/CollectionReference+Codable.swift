public import DocModel

extension CollectionReference {
    /// Creates a document with a device-made id (UUIDv7) holding `value`, encoded as
    /// ``DocumentReference/setData(from:merge:encoder:)`` does. A `@DocumentID` property of
    /// `value` is ignored: read the new id from the returned reference.
    @discardableResult
    public func addDocument<T: Encodable>(
        from value: T, encoder: DocumentEncoder = DocumentEncoder()
    ) async throws(DocError) -> (DocumentReference, WriteHandle) {
        let reference = document()
        return (reference, try await reference.setData(from: value, encoder: encoder))
    }
}
