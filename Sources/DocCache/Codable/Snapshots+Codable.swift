public import DocModel

extension DocumentSnapshot {
    /// The document decoded as `T` (``DocumentDecoder``): `@DocumentID` properties get this
    /// document's id, pending server timestamps read as `serverTimestamps` says (as in
    /// ``data(serverTimestamps:)``). A tombstone decodes its fields, as ``data(serverTimestamps:)``
    /// returns them: check ``isDeleted``.
    ///
    /// - Throws: `notFound` when the document does not exist; `invalidArgument` naming the
    ///   field that does not fit `T`.
    public func data<T: Decodable>(
        as type: T.Type, serverTimestamps: ServerTimestampBehavior = .none, decoder: DocumentDecoder = DocumentDecoder()
    ) throws(DocError) -> T {
        guard let fields = data(serverTimestamps: serverTimestamps) else {
            throw DocError(.notFound, "the document does not exist", at: key.description)
        }
        return try decoder.decode(type, from: fields, documentKey: key)
    }
}

extension QuerySnapshot {
    /// Every document decoded as `T`, in the snapshot's order (see
    /// ``DocumentSnapshot/data(as:serverTimestamps:decoder:)``).
    ///
    /// - Throws: `invalidArgument` naming the first document and field that does not fit `T`.
    public func documents<T: Decodable>(
        as type: T.Type, serverTimestamps: ServerTimestampBehavior = .none, decoder: DocumentDecoder = DocumentDecoder()
    ) throws(DocError) -> [T] {
        var decoded: [T] = []
        decoded.reserveCapacity(documents.count)
        for document in documents {
            decoded.append(try document.data(as: type, serverTimestamps: serverTimestamps, decoder: decoder))
        }
        return decoded
    }
}
