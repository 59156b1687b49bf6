public import DocModel
internal import LevelDB
internal import Synchronization

/// The embedded store: every tenant in one LevelDB database under its own key prefix (see
/// ``TenantKeys`` for the layout).
///
/// Durability: commits are written with `sync: true` by default, so a commit the server has
/// acknowledged survives a crash of the process *and* of the machine (power loss): LevelDB
/// flushes its log to stable storage before the write returns. With
/// ``Options/syncWrites`` off (tests), acknowledged commits survive a process crash only.
///
/// Concurrency: each tenant's commits are applied one at a time under a lock (the check of the
/// batch outcome, the version check and the write batch are one critical section); tenants
/// commit in parallel; reads go through LevelDB snapshots and never wait for commits.
///
/// Queries: every commit also writes the query index rows of the documents it changes
/// (``DocumentIndexEntries``) and removes those of their previous versions, in the same write
/// batch; ``TenantStore/query(_:limit:)`` runs through ``ServerQueryPlanner`` over a snapshot
/// (docs/server-queries.md).
public final class LevelDBServerStore: ServerStore {
    /// Settings of the embedded store.
    public struct Options: Sendable {
        /// Flush every commit to stable storage before it is acknowledged (default `true`).
        public var syncWrites: Bool
        /// The clock that dates new tenant databases and outcome records.
        public var clock: ServerClock
        /// The declared composite indexes (docs/server-queries.md, "Composite indexes"):
        /// opening the store builds those it lacks and drops the rows of those no longer
        /// declared; commits keep every declared one, and queries they serve read them.
        public var compositeIndexes: [CompositeIndex]

        /// Creates settings: synced writes, the system clock and no composite indexes by default.
        public init(syncWrites: Bool = true, clock: ServerClock = .system, compositeIndexes: [CompositeIndex] = []) {
            self.syncWrites = syncWrites
            self.clock = clock
            self.compositeIndexes = compositeIndexes
        }
    }

    /// The version of the key layout, stored under the global key `0x00 "format"`.
    ///
    /// - `1`: documents, group index, change log, outcomes, tenant state.
    /// - `2`: adds the query indexes (``TenantKeys`` spaces `i`, `a`, `u`).
    /// - `3`: adds the attachment references (space `r`).
    ///
    /// A directory of an older layout is migrated when it is opened (``LevelDBIndexMigration``).
    public static let formatVersion = "3"

    /// The global key the layout version is stored under.
    static let formatKey = [TenantKeys.globalMarker] + Array("format".utf8)

    let database: Database
    let options: Options
    private let tenants = Mutex<[TenantID: LevelDBTenantStore]>([:])

    /// What opening the store did to its composite indexes: the ids of those built and of
    /// those dropped (``Options/compositeIndexes``), and how many documents the build read.
    public let compositeIndexChanges: (built: [String], dropped: [String], documentsRead: Int)

    private init(database: Database, options: Options, compositeIndexChanges: LevelDBCompositeIndexes.Report) {
        self.database = database
        self.options = options
        self.compositeIndexChanges = (compositeIndexChanges.built, compositeIndexChanges.dropped, compositeIndexChanges.documentsRead)
    }

    /// How the database is opened: a Bloom filter per table (an index walk probes the
    /// indexes for entries that are mostly absent, and a missing key then costs no block
    /// read), and a 64 MiB block cache for the index and document blocks queries revisit.
    static let databaseOptions = LevelDB.Options(createIfMissing: true, blockCacheSize: 64 << 20, bloomFilterBitsPerKey: 10)

    /// Opens (creating if needed) the store in `directory`. A directory of layout 1 or 2 is
    /// migrated to layout 3 first: the index rows it lacks (query indexes, attachment
    /// references) are built for its documents (one pass over the documents; an interrupted
    /// migration starts over on the next open). Then the
    /// composite indexes are brought in line with ``Options/compositeIndexes``
    /// (``LevelDBCompositeIndexes``: one pass over the documents when one was added).
    ///
    /// - Throws: `unavailable` when the directory cannot be opened (e.g. another process has
    ///   it), `failedPrecondition` when it holds a layout this server does not read.
    public static func open(directory: String, options: Options = Options()) throws(DocError) -> LevelDBServerStore {
        let database: Database
        do {
            database = try Database.open(path: directory, options: Self.databaseOptions)
        } catch {
            throw DocError(.unavailable, "cannot open the store at \(directory): \(error.message)")
        }
        let formatKey = Self.formatKey
        let writeOptions = WriteOptions(sync: options.syncWrites)
        let report: LevelDBCompositeIndexes.Report
        do throws(DocError) {
            switch try run({ try database.get(formatKey) }).map({ String(decoding: $0, as: UTF8.self) }) {
            case nil:
                try run { try database.put(formatKey, Array(formatVersion.utf8), options: writeOptions) }
            case formatVersion?:
                break
            case let stored? where LevelDBIndexMigration.fromVersions.contains(stored):
                try LevelDBIndexMigration.migrate(database, from: stored, formatKey: formatKey, options: writeOptions)
            case let stored?:
                throw DocError(.failedPrecondition, "the store at \(directory) has layout \(stored); this server reads layouts \(LevelDBIndexMigration.fromVersions.joined(separator: ", ")) (migrated when opened) and \(formatVersion)")
            }
            report = try LevelDBCompositeIndexes.synchronize(database, declared: options.compositeIndexes, options: writeOptions)
        } catch {
            database.close()
            throw error
        }
        return LevelDBServerStore(database: database, options: options, compositeIndexChanges: report)
    }

    /// The tenant's store, kept open for later calls; the first call writes the tenant's state
    /// (creation time, random incarnation). Throws `unavailable` once the store is closed.
    public func tenant(_ tenant: TenantID) async throws(DocError) -> any TenantStore {
        try tenantStore(tenant)
    }

    /// The concrete tenant store (for tests).
    func tenantStore(_ tenant: TenantID) throws(DocError) -> LevelDBTenantStore {
        guard !database.isClosed else { throw DocError(.unavailable, "the store is closed") }
        if let open = tenants.withLock({ $0[tenant] }) { return open }
        let store = try LevelDBTenantStore(database: database, tenant: tenant, options: options)
        return tenants.withLock { open in
            if let existing = open[tenant] { return existing }
            open[tenant] = store
            return store
        }
    }

    /// Every tenant with keys in the store, in key order (one seek per tenant). Throws
    /// `unavailable` once the store is closed, `dataLoss` for a tenant key that cannot be read.
    public func tenantIDs() async throws(DocError) -> [TenantID] {
        guard !database.isClosed else { throw DocError(.unavailable, "the store is closed") }
        return try Self.tenantIDs(in: database)
    }

    /// Walks the tenant prefixes: one seek per tenant (past all of a tenant's keys at once),
    /// as of `options`' snapshot if it has one (a backup).
    static func tenantIDs(in database: Database, options: ReadOptions = ReadOptions()) throws(DocError) -> [TenantID] {
        var found: [TenantID] = []
        do {
            let cursor = try database.cursor(options: options)
            try cursor.seek(to: [TenantKeys.tenantMarker])
            while let entry = try cursor.entry(), entry.key.first == TenantKeys.tenantMarker {
                var decoder = KeyDecoder(entry.key, offset: 1)
                let name = try decoder.readString()
                let tenant = try TenantID(name)
                found.append(tenant)
                guard let next = OrderedCode.prefixSuccessor(TenantKeys(tenant).prefix) else { break }
                try cursor.seek(to: next)
            }
        } catch let error as LevelDBError {
            throw Self.map(error)
        } catch let error as DocError {
            throw DocError(.dataLoss, "a tenant key cannot be read: \(error.message)")
        } catch {
            throw DocError(.internal, "\(error)")
        }
        return found
    }

    /// Reads the layout version key; throws `unavailable` when the store is closed or cannot be
    /// read.
    public func checkHealth() async throws(DocError) {
        guard !database.isClosed else { throw DocError(.unavailable, "the store is closed") }
        do {
            _ = try database.get(Self.formatKey)
        } catch {
            throw DocError(.unavailable, "the store cannot be read: \(error.message)")
        }
    }

    /// Closes the LevelDB database; later calls on the store and its tenant stores throw
    /// `unavailable`.
    public func close() async {
        database.close()
    }

    /// Runs `body`, mapping its LevelDB errors to ``DocError``s (``map(_:)``); a `DocError` it
    /// throws (e.g. `dataLoss` from decoding) passes through.
    static func run<T>(_ body: () throws -> T) throws(DocError) -> T {
        do {
            return try body()
        } catch let error as LevelDBError {
            throw map(error)
        } catch let error as DocError {
            throw error
        } catch {
            throw DocError(.internal, "\(error)")
        }
    }

    static func map(_ error: LevelDBError) -> DocError {
        switch error.code {
        case .closed: return DocError(.unavailable, "the store is closed")
        case .corruption: return DocError(.dataLoss, "the store is corrupt: \(error.message)")
        default: return DocError(.internal, "storage error: \(error.message)")
        }
    }
}

/// One tenant of a ``LevelDBServerStore``.
final class LevelDBTenantStore: TenantStore {
    let tenant: TenantID
    let keys: TenantKeys
    let database: Database
    private let writeOptions: WriteOptions
    private let clock: ServerClock
    /// The declared composite indexes, all complete (built when the store was opened).
    private let compositeIndexes: [CompositeIndex]
    /// The tenant's state; its lock is the tenant's commit lock.
    private let current: Mutex<TenantState>
    /// Held by an attachment collection and by the commits that recheck
    /// (``CommitRequest/recheck``), around the commit lock: the recheck and the deletions
    /// await, the commit lock cannot be held across them.
    private let collectionLock = AsyncLock()
    /// When each of the tenant's chores was last claimed (``claim(_:at:every:)``): one process
    /// owns the database, so the claims live in its memory.
    private let claims = Mutex<[TenantChore: Int64]>([:])

    init(database: Database, tenant: TenantID, options: LevelDBServerStore.Options) throws(DocError) {
        self.tenant = tenant
        self.keys = TenantKeys(tenant)
        self.database = database
        self.writeOptions = WriteOptions(sync: options.syncWrites)
        self.clock = options.clock
        self.compositeIndexes = options.compositeIndexes
        let keys = self.keys
        let state: TenantState
        do {
            if let record = try database.get(keys.state) {
                state = try TenantState(record: record)
            } else {
                let created = SnapshotVersion(microseconds: max(1, options.clock.nowMicros()))
                state = TenantState(lastVersion: created, incarnation: UInt64.random(in: 1...UInt64.max), changeLogFloor: created)
                try database.put(keys.state, state.record, options: writeOptions)
            }
        } catch let error as LevelDBError {
            throw LevelDBServerStore.map(error)
        } catch let error as DocError {
            throw error
        } catch {
            throw DocError(.internal, "\(error)")
        }
        current = Mutex(state)
    }

    private func run<T>(_ body: () throws -> T) throws(DocError) -> T {
        try LevelDBServerStore.run(body)
    }

    /// A snapshot of the tenant and its state as of that snapshot; the caller releases it.
    private func openSnapshot() throws(DocError) -> (ReadOptions, TenantState) {
        try run {
            let snapshot = try database.snapshot()
            let read = ReadOptions(snapshot: snapshot)
            do {
                guard let record = try database.get(keys.state, options: read) else {
                    throw DocError(.dataLoss, "the state of tenant \(tenant) is missing")
                }
                return (read, try TenantState(record: record))
            } catch {
                snapshot.release()
                throw error
            }
        }
    }

    /// Runs `body` with a snapshot and the tenant state as of that snapshot.
    private func withSnapshot<T>(_ body: (ReadOptions, TenantState) throws -> T) throws(DocError) -> T {
        let (read, state) = try openSnapshot()
        defer { read.snapshot?.release() }
        return try run { try body(read, state) }
    }

    /// A query reader over a new snapshot and the tenant state as of that snapshot; release the
    /// reader when done (``LevelDBQueryReader/release()``).
    func queryReader() throws(DocError) -> (LevelDBQueryReader, TenantState) {
        let (read, state) = try openSnapshot()
        return (LevelDBQueryReader(database: database, keys: keys, options: read), state)
    }

    func state() async throws(DocError) -> TenantState {
        current.withLock { $0 }
    }

    func documents(_ keys: [DocumentKey]) async throws(DocError) -> DocumentsRead {
        try withSnapshot { read, state in
            var found: [DocumentKey: Document] = [:]
            for key in keys {
                if let bytes = try database.get(self.keys.document(key), options: read) {
                    found[key] = try Document(binary: bytes)
                }
            }
            return DocumentsRead(version: state.lastVersion, documents: found)
        }
    }

    func query(_ target: Target, limit: Int?) async throws(DocError) -> QueryRead {
        let (reader, state) = try queryReader()
        defer { reader.release() }
        let execution = try await ServerQueryPlanner(target: target, limit: limit, compositeIndexes: compositeIndexes).execute(with: reader)
        return QueryRead(version: state.lastVersion, documents: execution.documents)
    }

    func aggregate(_ target: Target, _ fields: [AggregateField]) async throws(DocError) -> AggregateRead {
        let (reader, state) = try queryReader()
        defer { reader.release() }
        let result = try await QueryFold(target: target, compositeIndexes: compositeIndexes).aggregate(fields, with: reader)
        return AggregateRead(version: state.lastVersion, result: result)
    }

    func changes(after version: SnapshotVersion, maxEntries: Int) async throws(DocError) -> ChangeLogRead {
        try withSnapshot { read, state in
            guard version >= state.changeLogFloor else {
                return .unavailable("version \(version) is older than the change log, which starts after \(state.changeLogFloor)")
            }
            guard version <= state.lastVersion else {
                return .unavailable("version \(version) is newer than the last commit \(state.lastVersion)")
            }
            let start = keys.changeLogStart(SnapshotVersion(microseconds: version.microseconds + 1))
            let range = KeyRange.prefix(keys.changeLogSpace)
            var entries = try database.entries(in: KeyRange(lowerBound: start, upperBound: range.upperBound), options: read)
                .makeIterator()
            var changes: [ChangeLogEntry] = []
            while let entry = try entries.nextEntry() {
                guard changes.count < maxEntries else {
                    return .unavailable("more than \(maxEntries) changes after version \(version)")
                }
                let document = try MaybeDocument(binary: entry.value)
                changes.append(ChangeLogEntry(version: document.version, document: document))
            }
            return .complete(changes, through: state.lastVersion)
        }
    }

    func scan(after: DocumentKey?, limit: Int) async throws(DocError) -> [Document] {
        let range = LevelDBQueryReader.range(.prefix(keys.documentSpace), after: after.map(keys.document), descending: false)
        return try run {
            var entries = try database.entries(in: range).makeIterator()
            var documents: [Document] = []
            while documents.count < limit, let entry = try entries.nextEntry() {
                documents.append(try Document(binary: entry.value))
            }
            return documents
        }
    }

    func referencedAttachments(among ids: [AttachmentID]) async throws(DocError) -> Set<AttachmentID> {
        try run {
            // One cursor, one seek per id (a collection may look up every attachment of the
            // tenant): an id is referenced when a key under its prefix follows the seek.
            let cursor = try database.cursor()
            var referenced = Set<AttachmentID>()
            for id in ids where !referenced.contains(id) {
                let prefix = keys.attachmentReferences(id)
                try cursor.seek(to: prefix)
                if cursor.isValid, try cursor.key().starts(with: prefix) { referenced.insert(id) }
            }
            return referenced
        }
    }

    func outcome(of batch: BatchKey) async throws(DocError) -> BatchOutcome? {
        try storedOutcome(batch)
    }

    func laterOutcomeExists(after batch: BatchKey) async throws(DocError) -> Bool {
        try run { try laterOutcome(of: batch.clientID, after: batch.batchID, cursor: try database.cursor()) }
    }

    /// ``TenantStore/readAhead(batches:documents:)`` with one seek per batch for its outcome or
    /// a later one (``outcomeRecord(of:cursor:)``).
    func readAhead(batches: [BatchKey], documents keys: [DocumentKey]) async throws(DocError) -> GroupReadAhead {
        let state = try await state()
        var outcomes: [BatchKey: BatchOutcome] = [:]
        var processedBefore = Set<BatchKey>()
        try run {
            let cursor = try database.cursor()
            for batch in batches {
                let record = try outcomeRecord(of: batch, cursor: cursor)
                if let outcome = record.outcome {
                    outcomes[batch] = outcome
                } else if record.later {
                    processedBefore.insert(batch)
                }
            }
        }
        let documents = keys.isEmpty ? [:] : try await documents(keys).documents
        return GroupReadAhead(state: state, outcomes: outcomes, documents: documents, processedBefore: processedBefore)
    }

    /// The stored outcome of `batch`, or whether a later batch of its client has one: the
    /// first outcome key at or after the batch's own, in one seek.
    private func outcomeRecord(of batch: BatchKey, cursor: Cursor) throws -> (outcome: BatchOutcome?, later: Bool) {
        let key = keys.outcome(batch)
        try cursor.seek(to: key)
        guard let entry = try cursor.entry() else { return (nil, false) }
        if entry.key == key { return (try BatchOutcome(record: entry.value), false) }
        return (nil, entry.key.starts(with: keys.outcomes(of: batch.clientID)))
    }

    /// Whether `clientID` has a stored outcome of a batch after `batchID`.
    private func laterOutcome(of clientID: String, after batchID: Int, cursor: Cursor) throws -> Bool {
        // The wire takes batch ids up to Int64.max: none comes after that one.
        guard batchID < Int.max else { return false }
        try cursor.seek(to: keys.outcome(BatchKey(clientID: clientID, batchID: batchID + 1)))
        return try cursor.isValid && cursor.key().starts(with: keys.outcomes(of: clientID))
    }

    func deleteUnreferencedAttachments(
        among ids: [AttachmentID], _ delete: @escaping @Sendable (AttachmentID) async throws(DocError) -> Bool
    ) async throws(DocError) -> [AttachmentID] {
        try await collectionLock.run { () async throws(DocError) -> [AttachmentID] in
            let referenced = try await referencedAttachments(among: ids)
            var deleted: [AttachmentID] = []
            for id in ids where !referenced.contains(id) {
                if try await delete(id) { deleted.append(id) }
            }
            return deleted
        }
    }

    func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult {
        guard let recheck = request.recheck else { return try commitLocked(request) }
        return try await collectionLock.run { () async throws(DocError) -> CommitResult in
            // A re-sent batch is answered from its outcome, whatever the recheck would say.
            if let existing = try storedOutcome(request.outcome.batch) { return .duplicate(existing) }
            try await recheck()
            return try commitLocked(request)
        }
    }

    /// The stored outcome of `batch`, read now.
    private func storedOutcome(_ batch: BatchKey) throws(DocError) -> BatchOutcome? {
        try run { try database.get(keys.outcome(batch)).map { bytes throws in try BatchOutcome(record: bytes) } }
    }

    /// ``commit(_:)`` under the commit lock (its recheck, if any, done).
    private func commitLocked(_ request: CommitRequest) throws(DocError) -> CommitResult {
        // The new documents' index rows depend on nothing stored: built before taking the lock.
        let newRows = indexRows(of: request)
        return try current.withLock { (state: inout TenantState) throws(DocError) -> CommitResult in
            if let existing = try storedOutcome(request.outcome.batch) {
                return .duplicate(existing)
            }
            var batch = WriteBatch()
            var newState = state
            var written: [DocumentKey: Document?] = [:]
            try stage(request, rows: newRows, into: &batch, state: &newState, written: &written)
            stageState(newState, over: state, into: &batch)
            try run { try database.write(batch, options: writeOptions) }
            let previous = state.lastVersion
            state = newState
            return .stored(previousVersion: previous)
        }
    }

    /// Group commit: every request staged in order into one write batch, against the state
    /// the requests before it leave, and written with one (synced) write.
    func commitGroup(_ requests: [CommitRequest]) async throws(DocError) -> SnapshotVersion {
        let rechecks = requests.compactMap(\.recheck)
        guard !rechecks.isEmpty else { return try commitGroupLocked(requests) }
        return try await collectionLock.run { () async throws(DocError) -> SnapshotVersion in
            for recheck in rechecks { try await recheck() }
            return try commitGroupLocked(requests)
        }
    }

    /// ``commitGroup(_:)`` under the commit lock (the rechecks done).
    private func commitGroupLocked(_ requests: [CommitRequest]) throws(DocError) -> SnapshotVersion {
        let rows = requests.map(indexRows(of:))
        return try current.withLock { (state: inout TenantState) throws(DocError) -> SnapshotVersion in
            var batch = WriteBatch()
            var newState = state
            var written: [DocumentKey: Document?] = [:]
            var batches = Set<BatchKey>()
            for (request, newRows) in zip(requests, rows) {
                let key = request.outcome.batch
                guard batches.insert(key).inserted, try run({ try database.get(keys.outcome(key)) }) == nil else {
                    throw DocError(.aborted, "batch \(key) already has an outcome")
                }
                try stage(request, rows: newRows, into: &batch, state: &newState, written: &written)
            }
            stageState(newState, over: state, into: &batch)
            if !batch.isEmpty { try run { try database.write(batch, options: writeOptions) } }
            let previous = state.lastVersion
            state = newState
            return previous
        }
    }

    /// The index rows of the documents a request writes.
    private func indexRows(of request: CommitRequest) -> [DocumentKey: [[UInt8]]] {
        var rows: [DocumentKey: [[UInt8]]] = [:]
        for write in request.writes {
            if let document = write.document { rows[write.key] = keys.indexRows(of: document, compositeIndexes: compositeIndexes) }
        }
        return rows
    }

    /// Adds the tenant state record to `batch` when staging changed it (once per write batch,
    /// however many requests it holds).
    private func stageState(_ new: TenantState, over old: TenantState, into batch: inout WriteBatch) {
        if new != old { batch.put(keys.state, new.record) }
    }

    /// Checks one request against `state` and the documents written before it in the same
    /// write batch (`written`), and adds its rows to `batch`: documents, index rows, change log
    /// entries and the outcome, and advances `state` (``stageState(_:over:into:)`` writes it).
    /// Call under the commit lock.
    private func stage(_ request: CommitRequest, rows newRows: [DocumentKey: [[UInt8]]], into batch: inout WriteBatch,
                       state: inout TenantState, written: inout [DocumentKey: Document?]) throws(DocError) {
        let outcome = request.outcome
        let version = outcome.commitVersion
        if let version {
            guard version > state.lastVersion else {
                throw DocError(.aborted, "commit version \(version) is not above the last version \(state.lastVersion) of tenant \(tenant)")
            }
        } else if !request.writes.isEmpty {
            throw DocError(.internal, "a rejected batch cannot write documents")
        }
        // The stored documents as read for the version check (a rejection's too: it rests on
        // them as a commit does); a commit's index rows to replace are theirs.
        var stored: [DocumentKey: Document?] = [:]
        for (key, expected) in request.readVersions {
            let document = try latestDocument(key, written: written)
            let current = document?.version ?? .none
            guard current == expected else {
                throw DocError(.aborted, "\(key) changed since the batch read it (version \(expected), now \(current))")
            }
            stored.updateValue(document, forKey: key)
        }
        if let version {
            for write in request.writes {
                let previous: Document?
                if let read = stored[write.key] { previous = read } else { previous = try latestDocument(write.key, written: written) }
                replaceIndexRows(of: previous, with: newRows[write.key] ?? [], in: &batch)
                stored.updateValue(write.document, forKey: write.key)
                written.updateValue(write.document, forKey: write.key)
                if let document = write.document {
                    batch.put(keys.document(write.key), document.binaryEncoded())
                    batch.put(keys.groupEntry(write.key), [])
                    batch.put(keys.changeLog(version, write.key), MaybeDocument.document(document).binaryEncoded())
                } else {
                    batch.delete(keys.document(write.key))
                    batch.delete(keys.groupEntry(write.key))
                    batch.put(keys.changeLog(version, write.key),
                              MaybeDocument.noDocument(NoDocument(key: write.key, version: version)).binaryEncoded())
                }
            }
            state.lastVersion = version
        }
        batch.put(keys.outcome(outcome.batch), outcome.record)
        batch.put(keys.outcomeAge(outcome.recordedAt, outcome.batch), [])
    }

    /// A document as the write batch being staged leaves it: written earlier in it, or stored.
    private func latestDocument(_ key: DocumentKey, written: [DocumentKey: Document?]) throws(DocError) -> Document? {
        if let document = written[key] { return document }
        return try storedDocument(key)
    }

    /// The stored document `key`, if any (the latest state: call under the commit lock).
    private func storedDocument(_ key: DocumentKey) throws(DocError) -> Document? {
        try run { try database.get(keys.document(key)) }.map { bytes throws(DocError) in try Document(binary: bytes) }
    }

    /// Adds to `batch` the index row changes from `previous`'s rows to `rows`: only the rows
    /// that differ (an update of one field changes one or two rows).
    private func replaceIndexRows(of previous: Document?, with rows: [[UInt8]], in batch: inout WriteBatch) {
        guard let previous else {
            for row in rows { batch.put(row, []) }
            return
        }
        let old = Set(keys.indexRows(of: previous, compositeIndexes: compositeIndexes).map(HashedBytes.init))
        let new = Set(rows.map(HashedBytes.init))
        for row in old where !new.contains(row) { batch.delete(row.bytes) }
        for row in new where !old.contains(row) { batch.put(row.bytes, []) }
    }

    func pruneOutcomes(recordedBefore cutoff: Int64) async throws(DocError) -> Int {
        try current.withLock { (_: inout TenantState) throws(DocError) -> Int in
            try run {
                var batch = WriteBatch()
                let range = KeyRange(from: keys.outcomeAgeSpace, upTo: keys.outcomeAgeStart(cutoff))
                var entries = try database.entries(in: range).makeIterator()
                let cursor = try database.cursor()
                var count = 0
                while let entry = try entries.nextEntry() {
                    let outcome = try keys.batch(fromAgeEntry: entry.key)
                    // Each client's latest outcome stays (laterOutcomeExists(after:)).
                    guard try laterOutcome(of: outcome.clientID, after: outcome.batchID, cursor: cursor) else { continue }
                    batch.delete(entry.key)
                    batch.delete(keys.outcome(outcome))
                    count += 1
                }
                if count > 0 { try database.write(batch, options: writeOptions) }
                return count
            }
        }
    }

    func pruneChangeLog(before cutoff: SnapshotVersion) async throws(DocError) -> Int {
        try current.withLock { (state: inout TenantState) throws(DocError) -> Int in
            var newState = state
            let count = try run {
                var batch = WriteBatch()
                let range = KeyRange(from: keys.changeLogSpace, upTo: keys.changeLogStart(cutoff))
                var entries = try database.entries(in: range).makeIterator()
                var count = 0
                while let entry = try entries.nextEntry() {
                    batch.delete(entry.key)
                    count += 1
                }
                let floor = SnapshotVersion(microseconds: min(cutoff.microseconds - 1, state.lastVersion.microseconds))
                if floor > state.changeLogFloor {
                    newState.changeLogFloor = floor
                    batch.put(keys.state, newState.record)
                }
                if !batch.isEmpty { try database.write(batch, options: writeOptions) }
                return count
            }
            state = newState
            return count
        }
    }

    func claim(_ chore: TenantChore, at now: Int64, every interval: Int64) async throws(DocError) -> Bool {
        claims.withLock { claims in
            if let last = claims[chore], now - last < interval { return false }
            claims[chore] = now
            return true
        }
    }

    func releaseClaim(_ chore: TenantChore, claimedAt time: Int64) async throws(DocError) {
        claims.withLock { claims in
            if claims[chore] == time { claims[chore] = nil }
        }
    }
}
