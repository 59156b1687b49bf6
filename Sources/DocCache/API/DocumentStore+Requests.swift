public import DocModel

extension DocumentStore {
    /// Submits a request document: `requests/{id}` with `type`, `params`, `base` (each
    /// document the user based the request on, with the version they saw), `status:
    /// "pending"`, `createdBy` and `createdAt`. The server runs the handler of `type` once,
    /// checking first that every base version is still current, and records the outcome on
    /// the request (see docs/request-documents.md).
    ///
    /// It is an ordinary queued write: it is accepted locally at once (durable), works offline
    /// and is sent when the server is reachable. Retrying a rejected request means submitting
    /// a new one.
    ///
    /// - Throws: `invalidArgument` for an empty type, invalid params, or a `base` of more than
    ///   ``DocModel/DocumentLimits/maxRequestBaseEntries`` documents (the server could not
    ///   verify them in one commit).
    public func submitRequest(
        type: String, params: [String: Value], base: [DocumentReference: SnapshotVersion] = [:]
    ) async throws(DocError) -> RequestHandle {
        guard !type.isEmpty else { throw DocError(.invalidArgument, "a request needs a type", at: "type") }
        guard base.count <= DocumentLimits.maxRequestBaseEntries else {
            throw DocError(.invalidArgument, "a request may name at most \(DocumentLimits.maxRequestBaseEntries) base documents, "
                               + "got \(base.count)", at: "base")
        }
        let reference = try collection(Self.requestsCollection).document()
        var baseMap: [String: FieldValue] = [:]
        for (document, version) in base {
            guard document.store === self else {
                throw DocError(.invalidArgument, "base document \(document.path) belongs to another store", at: "base")
            }
            baseMap[document.path] = .value(.integer(version.microseconds))
        }
        let handle = try await reference.setData([
            "type": .value(.string(type)),
            "params": .value(.map(params)),
            "base": .map(baseMap),
            "status": .value(.string("pending")),
            "createdBy": .value(.string(user)),
            "createdAt": .serverTimestamp(),
        ])
        return RequestHandle(id: reference.documentID, reference: reference, write: handle)
    }

    /// The handle of a request submitted earlier (e.g. before an app restart).
    public func request(id: String) throws(DocError) -> RequestHandle {
        let reference = try collection(Self.requestsCollection).document(id)
        return RequestHandle(id: id, reference: reference, write: nil)
    }

    /// This user's requests, newest first, for an outbox screen: all of them, or only those
    /// whose status has the given name (`pendingLocal`, `pendingServer`, `applied`,
    /// `rejected`). Reads the cache and the server (`source`).
    public func requests(whereStatus status: String? = nil, limit: Int = 100, source: Source = .default)
        async throws(DocError) -> [RequestSnapshot]
    {
        let query = try collection(Self.requestsCollection).whereField("createdBy", isEqualTo: .string(user))
            .order(by: "createdAt", descending: true).limit(to: limit)
        let snapshot = try await query.getDocuments(source: source)
        let all = snapshot.documents.map(RequestSnapshot.init)
        guard let status else { return all }
        return all.filter { $0.status.name == status }
    }

    /// The collection of request documents.
    static let requestsCollection = "requests"
}
