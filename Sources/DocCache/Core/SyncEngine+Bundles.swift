package import DocModel

extension SyncEngine {
    /// Loads a bundle that has been read and checked: the local store applies it in one
    /// transaction (or skips it when a bundle with the same id and an equal or later create
    /// time was loaded), then every view updates with the documents that changed, as Firestore's
    /// `SyncEngine::LoadBundle` does (no remote event: the views' sync state is unchanged, so a
    /// document the server has not confirmed for a target shows in limbo). Returns whether the
    /// bundle was applied.
    @discardableResult
    package func loadBundle(_ bundle: DocumentBundle) throws(DocError) -> Bool {
        guard let changes = try localStore.applyBundle(bundle) else { return false }
        emitNewSnapshots(changes: changes, remoteEvent: nil)
        return true
    }
}
