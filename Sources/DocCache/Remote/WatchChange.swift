package import DocModel
package import DocProtocol

/// One message of the watch stream, after decoding.
package enum WatchChange: Sendable, Hashable {
    /// A document now matches `updatedTargetIDs` and no longer matches `removedTargetIDs`.
    /// `document` is the new state: a found document, a delete (`NoDocument`), or `nil` when
    /// the document merely left the targets (a "remove": the client may keep its copy).
    case document(DocumentChange)
    /// The server's count of documents matching a target, to detect missed removals, with
    /// the names of those documents as a bloom filter when the server sends one.
    case existenceFilter(targetID: TargetID, count: Int, bloomFilter: BloomFilterParameters? = nil)
    /// A change to the state of some targets (all active targets when `targetIDs` is empty).
    case target(TargetStateChange)

    package struct DocumentChange: Sendable, Hashable {
        package var updatedTargetIDs: [TargetID]
        package var removedTargetIDs: [TargetID]
        package var key: DocumentKey
        package var document: MaybeDocument?

        package init(updatedTargetIDs: [TargetID], removedTargetIDs: [TargetID], key: DocumentKey, document: MaybeDocument?) {
            self.updatedTargetIDs = updatedTargetIDs
            self.removedTargetIDs = removedTargetIDs
            self.key = key
            self.document = document
        }
    }

    /// A bloom filter as the server sent it, not yet checked (Firestore's
    /// `BloomFilterParameters`): the aggregator makes a ``BloomFilter`` of it, or ignores it
    /// when the parameters are invalid. The wire type itself.
    package typealias BloomFilterParameters = ServerMessage.ExistenceFilter.BloomFilter

    package struct TargetStateChange: Sendable, Hashable {
        package enum State: Sendable, Hashable {
            /// Nothing changed for the targets; a resume token / snapshot version may follow.
            case noChange
            /// The server acknowledged a target add.
            case added
            /// The server removed the targets; `cause` says why when it is an error.
            case removed
            /// The targets are consistent with the snapshot version that follows.
            case current
            /// The server forgot the targets' state: their documents must be re-sent.
            case reset
        }

        package var state: State
        package var targetIDs: [TargetID]
        package var resumeToken: ResumeToken
        package var cause: DocError?

        package init(state: State, targetIDs: [TargetID], resumeToken: ResumeToken = [], cause: DocError? = nil) {
            self.state = state
            self.targetIDs = targetIDs
            self.resumeToken = resumeToken
            self.cause = cause
        }
    }
}
