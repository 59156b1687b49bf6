public import DocModel

/// Where a request document is in its life: made on this device, accepted by the server,
/// then applied or rejected by the server's handler (see docs/request-documents.md).
public enum RequestStatus: Sendable, Hashable, CustomStringConvertible {
    /// Written to the local cache; not yet accepted by the server (offline, or in flight).
    case pendingLocal
    /// The server has the request and will process it (its handler has not run yet).
    case pendingServer
    /// The handler applied it; `result` is what it returned.
    case applied(result: Value)
    /// Rejected: by the handler or its base check (recorded on the request), or because the
    /// request document itself was refused (rules) or no longer exists.
    case rejected(code: DocError.Code, message: String)

    /// Applied or rejected: nothing will change any more. (Retrying means a new request.)
    public var isFinal: Bool {
        switch self {
        case .applied, .rejected: return true
        case .pendingLocal, .pendingServer: return false
        }
    }

    /// The status's name as stored and as `docctl` prints it: `pendingLocal`, `pendingServer`,
    /// `applied`, `rejected`.
    public var name: String {
        switch self {
        case .pendingLocal: return "pendingLocal"
        case .pendingServer: return "pendingServer"
        case .applied: return "applied"
        case .rejected: return "rejected"
        }
    }

    public var description: String {
        switch self {
        case .applied(let result): return "applied(\(result.jsonString))"
        case .rejected(let code, let message): return "rejected(\(code.name): \(message))"
        default: return name
        }
    }

    /// The status a snapshot of the request document shows.
    init(_ snapshot: DocumentSnapshot) {
        guard let data = snapshot.data(), snapshot.exists else {
            self = .rejected(code: .notFound,
                             message: "the request \(snapshot.documentID) does not exist: its write was rejected or reverted")
            return
        }
        switch data["status"] {
        case .string("applied")?:
            self = .applied(result: data["result"] ?? .null)
        case .string("rejected")?:
            var code = DocError.Code.unknown
            var message = "rejected"
            if case .map(let error)? = data["error"] {
                if case .string(let name)? = error["code"], let parsed = DocError.Code(name: name) { code = parsed }
                if case .string(let text)? = error["message"] { message = text }
            }
            self = .rejected(code: code, message: message)
        default:
            self = snapshot.metadata.hasPendingWrites ? .pendingLocal : .pendingServer
        }
    }
}

/// A request document as listed for an outbox screen.
public struct RequestSnapshot: Sendable {
    /// The request's id (a UUIDv7 made on the device).
    public let id: String
    /// The handler type.
    public let type: String
    /// The parameters.
    public let params: [String: Value]
    /// Where it is.
    public let status: RequestStatus
    /// When it was created (server time; nil until the server accepted it).
    public let createdAt: Timestamp?
    /// When the server processed it (nil until then).
    public let processedAt: Timestamp?

    init(_ snapshot: DocumentSnapshot) {
        let data = snapshot.data() ?? [:]
        id = snapshot.documentID
        if case .string(let type)? = data["type"] { self.type = type } else { type = "" }
        if case .map(let params)? = data["params"] { self.params = params } else { params = [:] }
        status = RequestStatus(snapshot)
        if case .timestamp(let t)? = data["createdAt"] { createdAt = t } else { createdAt = nil }
        if case .timestamp(let t)? = data["processedAt"] { processedAt = t } else { processedAt = nil }
    }
}
