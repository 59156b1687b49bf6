import DocModel
import DocProtocol

/// What the server has, read over a fresh raw WebSocket connection (no client cache in
/// between): the documents of a target as of its `current`.
enum ServerReads {
    /// Every document of `collection` (at most 1,000) by document id.
    static func collection(_ collection: String, url: String, token: String) async throws -> [String: [String: Value]] {
        let documents = try await read(try DocModel.Query(collection: collection).limit(to: 1_000).toTarget(), url: url, token: token)
        return Dictionary(uniqueKeysWithValues: documents.map { ($0.key.documentID, $0.data.fields) })
    }

    /// One document's fields, or nil when the server has none.
    static func document(_ path: String, url: String, token: String) async throws -> [String: Value]? {
        try await read(try DocModel.Query(document: DocumentKey(path)).toTarget(), url: url, token: token).first?.data.fields
    }

    private static func read(_ target: Target, url: String, token: String) async throws -> [Document] {
        let socket = RawSocket(url: url)
        defer { Task { await socket.close() } }
        guard case .welcome? = await socket.hello(token: token) else { throw DocError(.unavailable, "no welcome from \(url)") }
        socket.send(.addTarget(.init(targetID: 2, target: target)))
        var documents: [DocumentKey: Document] = [:]
        while let message = await socket.next() {
            switch message {
            case .documentChange(let change): documents[change.document.key] = change.document
            case .targetChange(let change) where change.state == .current: return Array(documents.values)
            case .targetChange(let change) where change.state == .removed:
                throw change.cause ?? DocError(.unknown, "the read's target was removed")
            default: continue
            }
        }
        throw DocError(.unavailable, "the connection to \(url) closed during a read")
    }
}
