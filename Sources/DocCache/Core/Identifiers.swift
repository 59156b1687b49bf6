/// Identifies a listen target. Query targets are even (2, 4, 6, …), limbo-resolution
/// targets odd (1, 3, 5, …), as in Firestore.
package typealias TargetID = Int32

/// Identifies a mutation batch in the local queue; strictly increasing, starting at 1.
package typealias BatchID = Int

/// A monotonically increasing number stamped on targets and documents when they are used,
/// the clock of LRU garbage collection.
package typealias ListenSequenceNumber = Int64

/// Opaque bytes the server hands out to resume a target (watch) or the write stream.
package typealias ResumeToken = [UInt8]

/// "No batch": before the first batch of the queue.
package let batchIDUnknown: BatchID = -1

/// Why a target is being listened to.
package enum QueryPurpose: Int, Sendable, Hashable {
    /// A user's query.
    case listen = 0
    /// Re-listening after the server's count did not match (existence filter mismatch).
    case existenceFilterMismatch = 1
    /// Resolving a document in limbo: a single-document target.
    case limboResolution = 2
    /// Re-listening after the server's count did not match even once the documents its
    /// bloom filter ruled out were removed (a false positive of the filter).
    case existenceFilterMismatchBloom = 3
}
