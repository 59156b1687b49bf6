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
public final class LevelDBServerStore: ServerStore {
    /// Settings of the embedded store.
    public struct Options: Sendable {
        /// Flush every commit to stable storage before it is acknowledged (default `true`).
        public var syncWrites: Bool
        /// The clock that dates new tenant databases and outcome records.
        public var clock: ServerClock

        public init(syncWrites: Bool = true, clock: ServerClock = .system) {
            self.syncWrites = syncWrites
            self.clock = clock
        }
    }

    /// The version of the key layout, stored under the global key `0x00 "format"`.
    public static let formatVersion = "1"

    let database: Database
    let options: Options
    private let tenants = Mutex<[TenantID: LevelDBTenantStore]>([:])

    private init(database: Database, options: Options) {
        self.database = database
        self.options = options
    }

    /// Opens (creating if needed) the store in `directory`.
    ///
    /// - Throws: `unavailable` when the directory cannot be opened (e.g. another process has
    ///   it), `failedPrecondition` when it holds another layout version.
    public static func open(directory: String, options: Options = Options()) throws(DocError) -> LevelDBServerStore {
        let database: Database
        do {
            database = try Database.open(path: directory, options: LevelDB.Options(createIfMissing: true))
        } catch {
            throw DocError(.unavailable, "cannot open the store at \(directory): \(error.message)")
        }
        let formatKey = [TenantKeys.globalMarker] + Array("format".utf8)
        let stored: [UInt8]?
        do {
            stored = try database.get(formatKey)
            if stored == nil {
                try database.put(formatKey, Array(formatVersion.utf8), options: WriteOptions(sync: options.syncWrites))
            }
        } catch {
            database.close()
            throw Self.map(error)
        }
        if let stored, stored != Array(formatVersion.utf8) {
            database.close()
            throw DocError(.failedPrecondition, "the store at \(directory) has layout \(String(decoding: stored, as: UTF8.self)); this server reads layout \(formatVersion)")
        }
        return LevelDBServerStore(database: database, options: options)
    }

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

    /// Walks the tenant prefixes: one seek per tenant (past all of a tenant's keys at once).
    public func tenantIDs() async throws(DocError) -> [TenantID] {
        guard !database.isClosed else { throw DocError(.unavailable, "the store is closed") }
        var found: [TenantID] = []
        do {
            let cursor = try database.cursor()
            try cursor.seek(to: [TenantKeys.tenantMarker])
            while let entry = try cursor.entry(), entry.key.first == TenantKeys.tenantMarker {
                var decoder = KeyDecoder(entry.key, offset: 1)
                let name = try decoder.readString()
                if let tenant = try? TenantID(name) { found.append(tenant) }
                guard let next = OrderedCode.prefixSuccessor(TenantKeys(try TenantID(name)).prefix) else { break }
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

    public func checkHealth() async throws(DocError) {
        guard !database.isClosed else { throw DocError(.unavailable, "the store is closed") }
        do {
            _ = try database.get([TenantKeys.globalMarker] + Array("format".utf8))
        } catch {
            throw DocError(.unavailable, "the store cannot be read: \(error.message)")
        }
    }

    public func close() async {
        database.close()
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
    private let database: Database
    private let writeOptions: WriteOptions
    private let clock: ServerClock
    /// The tenant's state; its lock is the tenant's commit lock.
    private let current: Mutex<TenantState>

    init(database: Database, tenant: TenantID, options: LevelDBServerStore.Options) throws(DocError) {
        self.tenant = tenant
        self.keys = TenantKeys(tenant)
        self.database = database
        self.writeOptions = WriteOptions(sync: options.syncWrites)
        self.clock = options.clock
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
        do {
            return try body()
        } catch let error as LevelDBError {
            throw LevelDBServerStore.map(error)
        } catch let error as DocError {
            throw error
        } catch {
            throw DocError(.internal, "\(error)")
        }
    }

    /// Runs `body` with a snapshot and the tenant state as of that snapshot.
    private func withSnapshot<T>(_ body: (ReadOptions, TenantState) throws -> T) throws(DocError) -> T {
        try run {
            let snapshot = try database.snapshot()
            defer { snapshot.release() }
            let read = ReadOptions(snapshot: snapshot)
            guard let record = try database.get(keys.state, options: read) else {
                throw DocError(.dataLoss, "the state of tenant \(tenant) is missing")
            }
            return try body(read, try TenantState(record: record))
        }
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
        try withSnapshot { read, state in
            var matches: [Document] = []
            func consider(_ document: Document) {
                if target.matches(document) { matches.append(document) }
            }
            if let group = target.collectionGroup {
                let prefix = keys.group(group)
                var entries = try database.entries(withPrefix: prefix, options: read).makeIterator()
                while let entry = try entries.nextEntry() {
                    let key = try keys.documentKey(fromGroupEntry: entry.key, group: group)
                    guard target.path.isPrefix(of: key.path) else { continue }
                    if let bytes = try database.get(keys.document(key), options: read) {
                        consider(try Document(binary: bytes))
                    }
                }
            } else if target.path.count % 2 == 0 {
                let key = DocumentKey(unchecked: target.path)
                if let bytes = try database.get(keys.document(key), options: read) {
                    consider(try Document(binary: bytes))
                }
            } else {
                var entries = try database.entries(withPrefix: keys.collection(target.path), options: read).makeIterator()
                while let entry = try entries.nextEntry() {
                    consider(try Document(binary: entry.value))
                }
            }
            matches.sort { target.compare($0, $1) < 0 }
            if let limit, matches.count > limit { matches.removeSubrange(limit...) }
            return QueryRead(version: state.lastVersion, documents: matches)
        }
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

    func outcome(of batch: BatchKey) async throws(DocError) -> BatchOutcome? {
        try run {
            try database.get(keys.outcome(batch)).map { bytes throws in try BatchOutcome(record: bytes) }
        }
    }

    func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult {
        try current.withLock { (state: inout TenantState) throws(DocError) -> CommitResult in
            let outcome = request.outcome
            if let existing = try run({ try database.get(keys.outcome(outcome.batch)) }) {
                return .duplicate(try BatchOutcome(record: existing))
            }
            var batch = WriteBatch()
            var newState = state
            if case .committed(let version, _) = outcome.result {
                guard version > state.lastVersion else {
                    throw DocError(.aborted, "commit version \(version) is not above the last version \(state.lastVersion) of tenant \(tenant)")
                }
                for (key, expected) in request.readVersions {
                    let stored = try run { try database.get(keys.document(key)) }
                    let current = try stored.map { bytes throws(DocError) in try Document(binary: bytes).version } ?? .none
                    guard current == expected else {
                        throw DocError(.aborted, "\(key) changed since the batch read it (version \(expected), now \(current))")
                    }
                }
                for write in request.writes {
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
                newState.lastVersion = version
                batch.put(keys.state, newState.record)
            } else if !request.writes.isEmpty {
                throw DocError(.internal, "a rejected batch cannot write documents")
            }
            batch.put(keys.outcome(outcome.batch), outcome.record)
            batch.put(keys.outcomeAge(outcome.recordedAt, outcome.batch), [])
            try run { try database.write(batch, options: writeOptions) }
            let previous = state.lastVersion
            state = newState
            return .stored(previousVersion: previous)
        }
    }

    func pruneOutcomes(recordedBefore cutoff: Int64) async throws(DocError) -> Int {
        try current.withLock { (_: inout TenantState) throws(DocError) -> Int in
            try run {
                var batch = WriteBatch()
                let range = KeyRange(from: keys.outcomeAgeSpace, upTo: keys.outcomeAgeStart(cutoff))
                var entries = try database.entries(in: range).makeIterator()
                var count = 0
                while let entry = try entries.nextEntry() {
                    batch.delete(entry.key)
                    batch.delete(keys.outcome(try keys.batch(fromAgeEntry: entry.key)))
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
}
