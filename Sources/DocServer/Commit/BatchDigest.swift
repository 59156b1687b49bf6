public import DocModel
internal import DocProtocol

/// A 64-bit digest (FNV-1a) of a batch's mutations in their canonical wire form.
///
/// Stored with each batch outcome: a batch re-sent with the same `(clientId, batchId)` but
/// other mutations (a client that lost its state and reuses ids) is refused instead of being
/// answered with the outcome of a different batch. It detects mistakes; it is not a
/// cryptographic hash.
public enum BatchDigest {
    /// The digest of `mutations`.
    public static func of(_ mutations: [Mutation]) -> UInt64 {
        let bytes = FrameEncoder.encode(.write(.init(clientID: "-", batchID: 0, mutations: mutations)))
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
