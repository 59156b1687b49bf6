extension DocError {
    /// The `location` that marks ``batchIDCollision(_:)``.
    static let batchIDCollisionLocation = "batchId"

    /// The server's answer to a batch whose `(clientId, batchId)` it already answered for other
    /// mutations: two stores write under one client id (one restored from a device backup, or
    /// copied, while the original went on writing). Not the batch's fault: a client that gets
    /// it takes a new client id and sends its queue again, in order (docs/protocol.md, "Client
    /// id"); the server attempts nothing more of the connection.
    public static func batchIDCollision(_ batchID: Int) -> DocError {
        DocError(.failedPrecondition,
                 "batch \(batchID) was already processed with other mutations under this client id: another store "
                     + "writes under it (restored from a backup, or copied); the client must take a new client id",
                 at: batchIDCollisionLocation)
    }

    /// Whether this is ``batchIDCollision(_:)``.
    public var isBatchIDCollision: Bool { code == .failedPrecondition && location == Self.batchIDCollisionLocation }
}

