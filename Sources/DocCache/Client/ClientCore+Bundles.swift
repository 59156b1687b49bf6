package import DocModel

extension ClientCore {
    /// Whether a bundle with this id and an equal or later create time was loaded already.
    package func hasNewerBundle(_ metadata: BundleMetadata) throws(DocError) -> Bool {
        try checkOpen()
        return try localStore.hasNewerBundle(metadata)
    }

    /// Applies a bundle that has been read and checked, in one transaction, and updates the
    /// listeners; `false` when it was skipped (loaded before with an equal or later create time).
    package func loadBundle(_ bundle: DocumentBundle) throws(DocError) -> Bool {
        try checkOpen()
        let applied = try syncEngine.loadBundle(bundle)
        // The failed writes' conflict views read the remote documents a bundle may have changed.
        if applied { failedWriteChanges.yield(()) }
        return applied
    }

    /// The named query saved under `name`, or `nil`.
    package func namedQuery(_ name: String) throws(DocError) -> BundleNamedQuery? {
        try checkOpen()
        return try localStore.namedQuery(name)
    }

    /// The server's current results of `query` and the snapshot version they are consistent
    /// at (what a bundle of them needs as its read time): a one-off listen that waits for the
    /// server, as a read with `source: .server` does. `unavailable` when the server cannot be
    /// reached.
    package func serverResultsForBundle(_ query: Query) async throws(DocError) -> (documents: [Document], readTime: SnapshotVersion) {
        guard canUseNetwork else {
            throw DocError(.unavailable, "the store is offline (no server, or the network is disabled)")
        }
        let box = OneShot<Result<([Document], SnapshotVersion), DocError>>()
        let id = try addListener(
            query: query, options: ListenOptions(includeMetadataChanges: true, waitForSyncWhenOnline: true), scopeID: nil
        ) { [weak self] result in
            switch result {
            case .success(let snapshot) where !snapshot.isFromCache:
                // Delivered on this actor right after the remote event that made the target
                // current: the local store's snapshot version is that event's.
                let version = self?.assumeIsolated { $0.localStore.lastRemoteSnapshotVersion } ?? .none
                box.fulfil(.success((snapshot.documents.documents, version)))
            case .success:
                box.fulfil(.failure(DocError(.unavailable, "the server could not be reached")))
            case .failure(let error):
                box.fulfil(.failure(error))
            }
        }
        let result = await box.value
        removeListener(id)
        return try result.get()
    }
}
