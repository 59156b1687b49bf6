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
}
