public import DocModel
internal import DocRules
internal import Logging
internal import Synchronization

/// One client connection after a successful handshake: who it is (tenant, user, token claims,
/// client id) and its ``outbound`` frames.
///
/// The tenant is fixed here, from the verified token, and every request of the connection is
/// served from that tenant's database only.
public final class ServerConnection: Sendable, Hashable, CustomStringConvertible {
    /// The server's name for the connection (`c-17`), in `welcome` and in logs.
    public let id: String
    /// The tenant (database) the connection belongs to.
    public let tenant: TenantID
    /// The authenticated user.
    public let uid: String
    /// The caller's token as the rules see it (`request.auth.token`): the verified token's
    /// custom claims plus `tenant`, `uid`, `sub` and, when known, `exp` and `iat` (see
    /// ``AuthContext/token``).
    public let authToken: [String: Value]
    /// The client id from `hello`; the connection's write batches must carry it.
    public let clientID: String
    /// Every frame for the client, in order. The transport sends what this yields and closes
    /// the connection when it ends (after a fatal `error` frame, or ``DocServerCore/close(_:)``).
    public let outbound: ConnectionOutbox
    /// The access log with the connection's `tenant`, `uid`, `client` and `connection` set.
    let accessLogger: Logger
    /// The first batch of the connection that failed for a transient reason, if one did.
    private let writeHalt = Mutex<(batchID: Int, code: DocError.Code)?>(nil)

    init(id: String, tenant: TenantID, uid: String, authToken: [String: Value], clientID: String, outboxCapacity: Int,
         accessLogger: Logger = .discarding) {
        self.id = id
        self.tenant = tenant
        self.uid = uid
        self.authToken = authToken
        self.clientID = clientID
        self.outbound = ConnectionOutbox(capacity: outboxCapacity)
        self.accessLogger = accessLogger
    }

    /// Records that batch `batchID` failed with `error`. After a transient failure no later
    /// batch (a higher id: a client numbers its batches in queue order) is attempted on the
    /// connection before that one is sent again (``haltedWrites(for:)``): the batches after
    /// it, already on their way, must not be committed ahead of it. (The DocCache client closes
    /// its write stream on a failure and sends them all again, in order, on a new connection.)
    /// A rejection halts nothing: the client drops that batch and goes on. An answer about the
    /// batch's id (``DocModel/DocError/isBatchIDConflict``: a collision, or a batch processed
    /// before) halts like a transient failure: the client sends the batches again, under a new
    /// client id or without that batch, on a new connection.
    func batchFailed(_ batchID: Int, _ error: DocError) {
        guard error.code.isTransient || error.isBatchIDConflict else { return }
        writeHalt.withLock { halt in
            if halt == nil { halt = (batchID, error.code) }
        }
    }

    /// Whether the batches of a frame (`batchIDs`, in order) may be attempted: `nil` when they
    /// may — no batch failed for a transient reason; or the frame sends the failed one again
    /// before any later one (which ends the halt); or it holds only earlier ones — else the
    /// error to answer the whole frame with.
    func haltedWrites(for batchIDs: [Int]) -> DocError? {
        writeHalt.withLock { halt -> DocError? in
            guard let failed = halt else { return nil }
            for batchID in batchIDs {
                if batchID == failed.batchID {
                    halt = nil
                    return nil
                }
                if batchID > failed.batchID {
                    return DocError(.unavailable, "not attempted: batch \(failed.batchID) of this connection failed "
                        + "(\(failed.code)) and must be committed first; send it again, then the batches after it")
                }
            }
            return nil
        }
    }

    /// `request.auth` for the connection's requests.
    var rulesAuth: RulesAuth { RulesAuth(uid: uid, token: authToken) }

    public static func == (a: ServerConnection, b: ServerConnection) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String { "\(id) (\(tenant)/\(uid))" }
}
