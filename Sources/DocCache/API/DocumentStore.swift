@_exported public import DocModel
import Foundation
public import Dispatch
public import Logging

/// An offline-first document store for one user of one tenant, cached in LevelDB.
///
/// Every write is accepted locally and durably first, shown at once by every affected
/// listener with `hasPendingWrites`, and synced when a server is reachable. Open one store per
/// (tenant, user): each has its own directory, so tenants and users never see each other's data.
///
/// ```swift
/// let server = try ServerEndpoint(url: "https://sync.example.com") { try await auth.token() }
/// let store = try await DocumentStore.open(directory: appSupport, tenant: "acme", user: "u1", server: server)
/// let rooms = try store.collection("rooms")
/// let handle = try await rooms.addDocument(data: ["name": "Lobby", "created": .serverTimestamp()])
/// for try await snapshot in try rooms.order(by: "name").limit(to: 50).snapshots() { … }
/// ```
///
/// Sync is visible: ``onlineState``, ``lastSyncError``, ``pendingWriteCount`` and
/// ``pendingWrites()``, and ``writeErrors()`` for writes the server rejects. Without a server
/// the store works offline only.
///
/// `DocumentStore` is `Sendable`; every method may be called from any task.
public final class DocumentStore: Sendable {
    package let core: ClientCore
    /// The tenant this store belongs to.
    public let tenant: String
    /// The user this store belongs to.
    public let user: String
    /// The settings the store was opened with.
    public let settings: StoreSettings
    /// Where snapshot listeners' callbacks run, in the order of their events: never inside
    /// the engine, so a slow callback does not hold up writes or sync. Given to `open`; by
    /// default the main queue on Apple platforms (as Firestore does) and, on Linux, where a
    /// program need not run the main queue, a serial queue of the store's own. (The async
    /// sequences, `snapshots()`, are delivered to their iterating task.)
    public let callbackQueue: DispatchQueue

    private init(core: ClientCore, tenant: String, user: String, settings: StoreSettings, callbackQueue: DispatchQueue) {
        self.core = core
        self.tenant = tenant
        self.user = user
        self.settings = settings
        self.callbackQueue = callbackQueue
    }

    /// Returns once every listener callback queued so far has run (tests: callbacks run on
    /// ``callbackQueue``, after the call that caused them returned).
    package func callbacksDelivered() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            callbackQueue.async { continuation.resume() }
        }
    }

    /// The callback queue of a store opened without one.
    static func defaultCallbackQueue(tenant: String, user: String) -> DispatchQueue {
        #if canImport(Darwin)
        return .main
        #else
        return DispatchQueue(label: "doccache.callbacks.\(tenant).\(user)", qos: .userInitiated)
        #endif
    }

    /// Opens (creating if needed) the store of `user` in `tenant` under `directory`.
    ///
    /// With a `server`, the store syncs with it: pending writes are sent, listeners listen on
    /// the server, and ``onlineState`` follows the connection. Without one (the default) the
    /// store works offline only: everything is answered from the cache and writes wait in
    /// the queue until the store is opened with a server.
    ///
    /// Snapshot listeners' callbacks run on `callbackQueue` (``callbackQueue``).
    ///
    /// The store logs to `logger`, silent by default; pass a `Logger` (swift-log) to see why a
    /// store is not syncing:
    ///
    /// ```swift
    /// let store = try await DocumentStore.open(directory: dir, tenant: "acme", user: uid, server: endpoint,
    ///                                          logger: Logger(label: DocumentStore.loggerLabel))
    /// ```
    ///
    /// It logs connection state changes and stream failures with the retry (`info` /
    /// `warning`), rejected writes (`warning`), attachment upload failures and retries, and a
    /// storage failure that stops the store (`error`); details of the sync machinery at
    /// `debug`.
    ///
    /// Fails with `failedPrecondition` if the store is already open (by this or another
    /// process) or was written by a newer version of doccache, and with `invalidArgument` for
    /// empty names or bad settings.
    public static func open(
        directory: String, tenant: String, user: String, settings: StoreSettings = StoreSettings(),
        server: ServerEndpoint? = nil, logger: Logger? = nil, callbackQueue: DispatchQueue? = nil
    ) async throws(DocError) -> DocumentStore {
        let logger = logger ?? silentLogger
        let network = server.map {
            NetworkConfiguration(transport: WebSocketTransport(server: $0.serverURL, logger: logger), token: $0.token,
                                 attachments: HTTPAttachmentTransport(baseURL: $0.serverURL.description))
        }
        return try await open(directory: directory, tenant: tenant, user: user, settings: settings, network: network,
                              logger: logger, callbackQueue: callbackQueue)
    }

    /// The label to give the `Logger` passed to ``open(directory:tenant:user:settings:server:logger:callbackQueue:)``.
    public static let loggerLabel = "doccache.client"

    /// A logger that drops everything: the default, so an app that bootstraps swift-log for
    /// its own messages does not get the store's unasked.
    package static let silentLogger = Logger(label: loggerLabel, factory: { _ in SwiftLogNoOpLogHandler() })

    /// Opens a store that reaches its server through `network` (tests pass an in-process
    /// transport; `nil` opens it offline).
    package static func open(
        directory: String, tenant: String, user: String, settings: StoreSettings = StoreSettings(),
        network: NetworkConfiguration?, logger: Logger? = nil, callbackQueue: DispatchQueue? = nil
    ) async throws(DocError) -> DocumentStore {
        try settings.validate()
        let path = try storeDirectory(directory, tenant: tenant, user: user)
        let core = try ClientCore(directory: path, user: user, settings: settings, network: network,
                                  logger: logger ?? silentLogger)
        let store = DocumentStore(core: core, tenant: tenant, user: user, settings: settings,
                                  callbackQueue: callbackQueue ?? defaultCallbackQueue(tenant: tenant, user: user))
        if network != nil {
            store.refreshConflictsAfterRejections()
            await core.startNextUpload()
        }
        return store
    }

    /// Closes the store: listeners end with `cancelled`, pending writes stay queued on disk for
    /// the next open.
    public func close() async { await core.close() }

    /// Deletes the cached data and pending writes of `user` in `tenant`. Refused while the
    /// store is open.
    public static func clearPersistence(directory: String, tenant: String, user: String) throws(DocError) {
        try Persistence.clear(directory: storeDirectory(directory, tenant: tenant, user: user))
    }

    /// `directory/<tenant>/<user>`, with both names escaped so that any string is a safe,
    /// distinct folder name.
    static func storeDirectory(_ directory: String, tenant: String, user: String) throws(DocError) -> String {
        guard !tenant.isEmpty else { throw DocError(.invalidArgument, "tenant must not be empty") }
        guard !user.isEmpty else { throw DocError(.invalidArgument, "user must not be empty") }
        guard !directory.isEmpty else { throw DocError(.invalidArgument, "directory must not be empty") }
        return directory + "/" + escape(tenant) + "/" + escape(user)
    }

    static func escape(_ name: String) -> String {
        var out = ""
        for byte in name.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if byte < 0x80, c.isLetter || c.isNumber || c == "-" || c == "_" {
                out.append(c)
            } else {
                out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    // MARK: - References

    /// The collection at `path` (an odd number of segments: `rooms`, `rooms/r1/messages`).
    public func collection(_ path: String) throws(DocError) -> CollectionReference {
        try CollectionReference(store: self, path: ResourcePath(path))
    }

    /// The document at `path` (an even number of segments: `rooms/r1`).
    public func document(_ path: String) throws(DocError) -> DocumentReference {
        DocumentReference(store: self, key: try DocumentKey(path))
    }

    /// Every collection named `id`, wherever it is.
    public func collectionGroup(_ id: String) throws(DocError) -> DocumentQuery {
        DocumentQuery(store: self, query: try Query(collectionGroup: id))
    }

    /// A batch of writes committed together, atomically.
    public func batch() -> WriteBatch { WriteBatch(store: self) }

    /// A scope to attach listeners to, so they can be detached and reattached together (for
    /// example when the app goes to the background and comes back).
    public func makeListenerScope() -> ListenerScope { ListenerScope(store: self) }

    // MARK: - Pending writes

    /// The number of batches waiting for the server.
    public var pendingWriteCount: Int { get async { await core.pendingWriteCount } }

    /// The pending-write count now and after every change, from the moment this is called (a
    /// write made right after asking is counted in it). Ending the iteration (or cancelling its
    /// task) stops the observation; the sequence ends when the store closes.
    public func pendingWriteCountUpdates() -> AsyncStream<Int> { core.pendingWriteCounts.stream() }

    /// Every batch waiting for the server, oldest first, each with its state (`pending`,
    /// `sending`, or `waiting` with the reason), its attempts and its last error.
    public func pendingWrites() async throws(DocError) -> [PendingWrite] { try await core.pendingWrites() }

    /// Drops a pending batch: it will not be sent (or its result is ignored) and the local view
    /// of its documents is restored; its `committed` throws `cancelled`.
    public func revert(_ batchID: Int) async throws(DocError) { try await core.revert(batchID) }

    /// Returns once every batch pending now has been acknowledged or rejected by the server.
    /// While offline it waits; it throws `cancelled` if the batches are discarded by
    /// ``resetFromServer()``, or if the waiting task is cancelled (the batches stay queued).
    public func waitForPendingWrites() async throws(DocError) { try await core.waitForPendingWrites() }

    /// Every write the server rejects, as it happens (the store-wide error stream), from the
    /// moment this is called: a rejection of a write made after asking for the stream is
    /// always in it. The stream ends when the store closes, after the errors it holds.
    public func writeErrors() -> AsyncStream<WriteError> { core.writeErrors.stream() }

    /// Collects least-recently-used cached documents beyond ``StoreSettings/cacheSizeBytes``.
    /// Documents with pending writes or in active listeners are never collected.
    @discardableResult
    public func collectGarbage() async throws(DocError) -> (targetsRemoved: Int, documentsRemoved: Int) {
        try await core.collectGarbage()
    }

    // MARK: - Internals shared by references

    func write(_ mutations: [Mutation], prevalidated: Bool = false) async throws(DocError) -> WriteHandle {
        let (batchID, tracker) = try await core.write(mutations, prevalidated: prevalidated)
        return WriteHandle(batchID: batchID, tracker: tracker)
    }
}
