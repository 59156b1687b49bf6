/// Where a listener's snapshots come from (`addSnapshotListener(source:)`,
/// `snapshots(source:)`).
public enum ListenSource: Sendable, Hashable {
    /// The local cache, kept in sync with the server (the query is listened to remotely).
    case `default`
    /// The local cache only: this listener never sends its query to the server. Snapshots
    /// change with local writes and with what other listeners (or a loaded bundle) bring into
    /// the cache, and say `isFromCache` — unless a `.default` listener of the same query keeps
    /// it in sync, whose snapshots it then shares (as in Firestore). The first snapshot comes
    /// at once, even when the cache has nothing. For screens that must not cost server reads.
    case cache
}

/// How a query listener raises events.
package struct ListenOptions: Sendable, Hashable {
    /// Raise an event when only the query's metadata changed (from cache ↔ synced, pending
    /// writes ↔ none), with no document changes.
    package var includeQueryMetadataChanges: Bool
    /// Report documents whose only change is their pending-write state (as `modified`).
    package var includeDocumentMetadataChanges: Bool
    /// Hold back the first snapshot until the results are synced with the server, unless the
    /// client is offline.
    package var waitForSyncWhenOnline: Bool
    /// Where snapshots come from.
    package var source: ListenSource

    package init(
        includeQueryMetadataChanges: Bool = false, includeDocumentMetadataChanges: Bool = false,
        waitForSyncWhenOnline: Bool = false, source: ListenSource = .default
    ) {
        self.includeQueryMetadataChanges = includeQueryMetadataChanges
        self.includeDocumentMetadataChanges = includeDocumentMetadataChanges
        self.waitForSyncWhenOnline = waitForSyncWhenOnline
        self.source = source
    }

    /// Options including (or not) both query and document metadata changes, as the public
    /// `includeMetadataChanges` flag does.
    package init(includeMetadataChanges: Bool, waitForSyncWhenOnline: Bool = false, source: ListenSource = .default) {
        self.init(
            includeQueryMetadataChanges: includeMetadataChanges, includeDocumentMetadataChanges: includeMetadataChanges,
            waitForSyncWhenOnline: waitForSyncWhenOnline, source: source)
    }

    /// No metadata changes, no waiting for sync, the default source.
    package static let `default` = ListenOptions()
}
