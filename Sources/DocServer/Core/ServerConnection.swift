public import DocModel
internal import DocRules
internal import Logging

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

    /// `request.auth` for the connection's requests.
    var rulesAuth: RulesAuth { RulesAuth(uid: uid, token: authToken) }

    public static func == (a: ServerConnection, b: ServerConnection) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String { "\(id) (\(tenant)/\(uid))" }
}
