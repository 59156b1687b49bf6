package import DocModel

// Loading bundles into the local store (docs/bundles.md), after Firestore's `LocalStore`
// (`HasNewerBundle`, `ApplyBundledDocuments`, `SaveNamedQuery`, `SaveBundle`), with one
// difference: a whole bundle is one transaction, so it is applied entirely or not at all.

extension LocalStore {
    /// The path of the target that holds a bundle's documents (a name no user path can have).
    static func umbrellaTarget(bundleID: String) -> Target {
        Target(path: ResourcePath(unchecked: ["__bundle__", "docs", bundleID]), collectionGroup: nil, filters: [],
               orderBys: [OrderBy(.documentID)], limit: nil, startAt: nil, endAt: nil, includeDeleted: false)
    }

    /// Whether a bundle with this id was loaded with the same or a later create time (it is
    /// then not loaded again).
    package func hasNewerBundle(_ metadata: BundleMetadata) throws(DocError) -> Bool {
        try persistence.run("Has newer bundle") { txn throws(DocError) in
            try Self.isNewer(BundleCache().metadata(of: metadata.id, in: txn), than: metadata)
        }
    }

    private static func isNewer(_ stored: BundleMetadata?, than metadata: BundleMetadata) -> Bool {
        guard let stored else { return false }
        return stored.createTime >= metadata.createTime
    }

    /// Applies a bundle in one transaction: its documents (each only where it is newer than
    /// the cached one), a target holding them (so they are not collected at once), its named
    /// queries (their targets resume from the query's read time when that is newer than what
    /// the target has) and its metadata. Returns the new local view of every changed document,
    /// or `nil` when a bundle with the same id and an equal or later create time was loaded
    /// before (nothing is written).
    package func applyBundle(_ bundle: DocumentBundle) throws(DocError) -> [DocumentKey: MaybeDocument?]? {
        var activeUpdates: [TargetID: TargetData] = [:]
        let changes = try persistence.run("Apply bundle") { txn throws(DocError) -> [DocumentKey: MaybeDocument?]? in
            let cache = BundleCache()
            if Self.isNewer(try cache.metadata(of: bundle.metadata.id, in: txn), than: bundle.metadata) { return nil }
            let sequence = txn.sequenceNumber

            // The documents, as a remote event stores them: only when newer.
            let changed = try applyDocumentUpdates(
                bundle.documents.map { (key: $0.key, document: $0.maybeDocument, readTime: $0.metadata.readTime) }, in: txn)

            // The bundle's target: its found documents belong to a target, so garbage
            // collection keeps them until that target is the least recently used.
            let umbrella = try targetForBundle(Self.umbrellaTarget(bundleID: bundle.metadata.id), sequence: sequence, in: txn)
            try persistence.targets.removeAllMatchingKeys(for: umbrella.targetID, in: txn)
            try persistence.targets.addMatchingKeys(bundle.documents.filter { $0.document != nil }.map(\.key),
                                                    to: umbrella.targetID, in: txn)

            // The named queries: a listen of one resumes from the bundle's read time.
            for named in bundle.namedQueries {
                let target = try named.query.toTarget()
                let data = try targetForBundle(target, sequence: sequence, in: txn)
                if named.readTime > data.snapshotVersion {
                    var updated = data.withResumeToken([], snapshotVersion: named.readTime).withSequenceNumber(sequence)
                    // The target's results now come from the bundle: the query engine must not
                    // reuse older results from a limbo-free snapshot.
                    updated.lastLimboFreeSnapshotVersion = .none
                    try persistence.targets.update(updated, in: txn)
                    try persistence.targets.removeAllMatchingKeys(for: data.targetID, in: txn)
                    try persistence.targets.addMatchingKeys(bundle.documentKeys(ofQuery: named.name), to: data.targetID, in: txn)
                    if activeTargets[data.targetID] != nil { activeUpdates[data.targetID] = updated }
                }
                cache.save(named, in: txn)
            }

            cache.save(bundle.metadata, in: txn)
            return try localViews(changed, in: txn)
        }
        for (id, data) in activeUpdates { activeTargets[id] = data }
        return changes
    }

    /// The data of `target`: the active one, the stored one, or a new one (added to the target
    /// cache, not made active). The target's sequence number is stamped.
    private func targetForBundle(
        _ target: Target, sequence: ListenSequenceNumber, in txn: PersistenceTransaction
    ) throws(DocError) -> TargetData {
        if let id = activeTargetIDs[target], let data = activeTargets[id] { return data }
        if let stored = try persistence.targets.targetData(for: target, in: txn) {
            let stamped = stored.withSequenceNumber(sequence)
            try persistence.targets.update(stamped, in: txn)
            return stamped
        }
        let fresh = TargetData(target: target, targetID: targetIDGenerator.nextID(), purpose: .listen, sequenceNumber: sequence)
        try persistence.targets.add(fresh, in: txn)
        return fresh
    }

    /// The named query saved under `name` by the last bundle that had it, or `nil`.
    package func namedQuery(_ name: String) throws(DocError) -> BundleNamedQuery? {
        try persistence.run("Get named query") { txn throws(DocError) in try BundleCache().namedQuery(name, in: txn) }
    }
}
