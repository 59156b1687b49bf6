public import DocModel

/// A query a bundle saved under a name, and when its results were read on the server.
public struct NamedQuery: Sendable {
    /// The name the bundle saved the query under (``DocumentStore/namedQuery(_:)`` finds it by).
    public let name: String
    /// The query, ready to read or listen to: a listen starts from the bundle's results in
    /// the cache (its target holds them, with ``readTime`` as its snapshot version), then the
    /// server sends the query's full results (the wire carries no read time to resume from;
    /// docs/bundles.md, "Limits").
    public let query: DocumentQuery
    /// When the bundle's results of the query were read.
    public let readTime: Timestamp
}

extension DocumentStore {
    /// Loads a bundle (Firestore's format, docs/bundles.md) into the cache: for example the
    /// data an app ships with, or fetches from a CDN, so its first launch has something to show
    /// before it ever reaches the server.
    ///
    /// The bundle is read and checked in full first; a malformed one is refused
    /// (`invalidArgument`, naming the element and its byte offset) and changes nothing. Then it
    /// is applied in one transaction, all of it or nothing:
    /// - a document is stored only where it is newer than the cached one (its update time, or
    ///   for a deleted document its read time, is later): newer data in the cache is never
    ///   overwritten by an older bundle;
    /// - a bundle already loaded with the same id and the same or a later create time is
    ///   skipped (the task still ends in `success`);
    /// - its named queries are saved (``namedQuery(_:)``); each one's target takes the query's
    ///   read time and results when they are newer than what the cache has, so a listen starts
    ///   from them (the server then sends the full results: docs/bundles.md, "Limits");
    /// - listeners see the documents at once (from the cache; pending writes stay on top), and
    ///   then sync with the server as usual.
    ///
    /// ```swift
    /// let task = store.loadBundle(bytes)
    /// for await progress in task.progressUpdates() { showProgress(progress.documentsLoaded, of: progress.totalDocuments) }
    /// _ = try await task.value
    /// if let prices = try await store.namedQuery("latest-prices") { … }
    /// ```
    @discardableResult
    public func loadBundle(_ bytes: [UInt8]) -> LoadBundleTask {
        let task = LoadBundleTask()
        let core = self.core
        Task { await Self.load(bytes, into: core, reporting: task) }
        return task
    }

    /// Loads a bundle given as text (its UTF-8 bytes); see `loadBundle(_:)`.
    @discardableResult
    public func loadBundle(_ text: String) -> LoadBundleTask { loadBundle(Array(text.utf8)) }

    /// The query a loaded bundle saved under `name` (the latest bundle that had the name wins),
    /// or `nil` when no bundle had it.
    public func namedQuery(_ name: String) async throws(DocError) -> DocumentQuery? {
        try await namedQueryDetails(name)?.query
    }

    /// The query a loaded bundle saved under `name`, with its read time; `nil` when no bundle
    /// had it.
    public func namedQueryDetails(_ name: String) async throws(DocError) -> NamedQuery? {
        guard let saved = try await core.namedQuery(name) else { return nil }
        return NamedQuery(name: saved.name, query: DocumentQuery(store: self, query: saved.query),
                          readTime: saved.readTime.timestamp)
    }

    /// Reads `bytes` as a bundle, reporting progress, then applies it.
    private static func load(_ bytes: [UInt8], into core: ClientCore, reporting task: LoadBundleTask) async {
        var reader = BundleReader(bytes)
        var progress = LoadBundleTaskProgress(documentsLoaded: 0, totalDocuments: 0, bytesLoaded: 0, totalBytes: 0, taskState: .running)
        do {
            let metadata = try reader.readMetadata()
            let done = LoadBundleTaskProgress(documentsLoaded: metadata.totalDocuments, totalDocuments: metadata.totalDocuments,
                                              bytesLoaded: metadata.totalBytes, totalBytes: metadata.totalBytes, taskState: .success)
            if try await core.hasNewerBundle(metadata) {
                task.finish(done)
                return
            }
            progress.totalDocuments = metadata.totalDocuments
            progress.totalBytes = metadata.totalBytes
            task.update(progress)
            let step = max(1, (metadata.totalDocuments + 99) / 100)
            while try reader.next() != nil {
                let loaded = reader.documentsRead
                guard loaded != progress.documentsLoaded, loaded % step == 0 || loaded == metadata.totalDocuments else { continue }
                progress.documentsLoaded = loaded
                progress.bytesLoaded = reader.bytesRead
                task.update(progress)
            }
            let bundle = try reader.finish()
            _ = try await core.loadBundle(bundle)
            task.finish(done)
        } catch {
            progress.taskState = .error
            task.finish(progress, error: error)
        }
    }
}
