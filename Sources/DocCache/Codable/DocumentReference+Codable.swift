public import DocModel

extension DocumentReference {
    /// Writes `value` as the document (``DocumentEncoder`` turns it into fields): replaces it,
    /// or with `merge` writes only the fields `value` encodes (nested maps merge field by
    /// field). `nil` optionals are left out by default, so with `merge` they keep the stored
    /// value (see ``DocumentEncoder/NilEncodingStrategy``). A `@DocumentID` property is not
    /// written; a `@ServerTimestamp` holding nil becomes the server's commit time.
    ///
    /// Without `merge`, fields other clients wrote that the type does not declare are dropped:
    /// the document becomes exactly what `value` encodes.
    ///
    /// - Throws: `invalidArgument` naming the field that cannot be encoded or breaks a limit
    ///   (size, depth, names), before anything is written.
    @discardableResult
    public func setData<T: Encodable>(
        from value: T, merge: Bool = false, encoder: DocumentEncoder = DocumentEncoder()
    ) async throws(DocError) -> WriteHandle {
        let fields = try encoder.encode(value, for: key)
        return try await setData(fields, merge: merge)
    }

    /// Reads the document once (as ``getDocument(source:)``) and decodes it as `T`.
    ///
    /// - Throws: `notFound` when the document does not exist; `invalidArgument` naming the
    ///   field that does not fit `T`; what ``getDocument(source:)`` throws.
    public func getDocument<T: Decodable>(
        as type: T.Type, source: Source = .default, serverTimestamps: ServerTimestampBehavior = .none,
        decoder: DocumentDecoder = DocumentDecoder()
    ) async throws(DocError) -> T {
        try await getDocument(source: source).data(as: type, serverTimestamps: serverTimestamps, decoder: decoder)
    }
}
