/// The server's two answers about a write batch's id rather than its contents, after which it
/// attempts nothing more of the connection (docs/protocol.md, "batch id collision", "Client
/// id"). Both are located at `batchId`.
extension DocError {
    /// The `location` of the answers about a batch's id.
    static let batchIDLocation = "batchId"

    /// The server's answer to a batch whose `(clientId, batchId)` it already answered for other
    /// mutations: two stores write under one client id (one restored from a device backup, or
    /// copied, while the original went on writing). Not the batch's fault: a client that gets
    /// it takes a new client id and sends its queue again, in order (docs/protocol.md, "Client
    /// id"); the server attempts nothing more of the connection.
    public static func batchIDCollision(_ batchID: Int) -> DocError {
        DocError(.failedPrecondition,
                 "batch \(batchID) was already processed with other mutations under this client id: another store "
                     + "writes under it (restored from a backup, or copied); the client must take a new client id",
                 at: batchIDLocation)
    }

    /// Whether this is ``batchIDCollision(_:)``.
    public var isBatchIDCollision: Bool { code == .failedPrecondition && location == Self.batchIDLocation }

    /// The server's answer to a batch it has no outcome of while a later batch of the same
    /// client has one: the batch was processed, and its outcome pruned after the retention (the
    /// client sends it again: its answer was lost, and it stayed offline for longer); or
    /// another store writes under the client id and used the batch's id for another batch
    /// since pruned. Not applied (again). A client that sent the batch before keeps it as a
    /// failed write with this error; one that never did takes a new client id, as after a
    /// collision (docs/protocol.md, "Client id").
    public static func batchProcessedBefore(_ batchID: Int) -> DocError {
        DocError(.alreadyExists,
                 "batch \(batchID) was processed longer ago than the server keeps its answers, and its answer was "
                     + "lost: it is not applied again. Its changes are most likely on the server already: compare, "
                     + "then discard this write or retry it",
                 at: batchIDLocation)
    }

    /// Whether this is ``batchProcessedBefore(_:)``.
    public var isBatchProcessedBefore: Bool { code == .alreadyExists && location == Self.batchIDLocation }

    /// Whether this is one of the two answers about a batch's id, after which the server
    /// attempts nothing more of the connection.
    public var isBatchIDConflict: Bool { isBatchIDCollision || isBatchProcessedBefore }
}
