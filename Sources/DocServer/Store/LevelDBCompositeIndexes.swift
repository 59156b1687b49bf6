internal import DocModel
internal import LevelDB

/// Brings a ``LevelDBServerStore``'s composite index rows (``TenantKeys`` space `c`, markers
/// in `u`) in line with the declared indexes (``LevelDBServerStore/Options/compositeIndexes``)
/// when the store is opened: the rows of an index no longer declared are deleted, and a newly
/// declared index gets the rows of every stored document, tenant by tenant, in write batches
/// of ``LevelDBIndexMigration/documentsPerBatch`` documents. Commits then keep the rows of
/// every declared index, so all of them are complete while the store is open (one process
/// has the directory).
///
/// The ids of the indexes built are recorded under a global key, last: an interrupted pass
/// leaves the previous record, and the next open deletes what it wrote and starts again. No
/// commit runs before the store is open. Cost: one read of the documents when an index is
/// added (seconds for a million documents); nothing when the declarations did not change.
enum LevelDBCompositeIndexes {
    /// The global key of the ids of the indexes whose rows the store holds.
    static let recordKey = [TenantKeys.globalMarker] + Array("composite-indexes".utf8)
    /// Rows deleted per write batch.
    static let deletesPerBatch = 1_000

    /// What an open changed.
    struct Report: Equatable {
        /// The ids of the indexes built.
        var built: [String] = []
        /// The ids of the indexes whose rows were deleted.
        var dropped: [String] = []
        /// The documents read to build them.
        var documentsRead = 0
    }

    /// The ids recorded as built.
    static func recordedIDs(_ database: Database) throws(DocError) -> [String] {
        guard let record = try LevelDBServerStore.run({ try database.get(recordKey) }) else { return [] }
        var d = KeyDecoder(record)
        var ids: [String] = []
        do throws(DocError) {
            while !d.isAtEnd { ids.append(try d.readString()) }
        } catch {
            throw DocError(.dataLoss, "the store's list of composite indexes cannot be read: \(error.message)")
        }
        return ids
    }

    /// Deletes the rows of the recorded indexes that `declared` lacks and builds those of the
    /// declared ones not recorded, then records `declared`.
    @discardableResult
    static func synchronize(_ database: Database, declared: [CompositeIndex], options: WriteOptions) throws(DocError) -> Report {
        let recorded = Set(try recordedIDs(database))
        var unique: [CompositeIndex] = []
        for index in declared where !unique.contains(where: { $0.id == index.id }) { unique.append(index) }
        let declaredIDs = Set(unique.map(\.id))
        var report = Report()
        report.dropped = recorded.subtracting(declaredIDs).sorted()
        let toBuild = unique.filter { !recorded.contains($0.id) }
        report.built = toBuild.map(\.id)
        guard !report.dropped.isEmpty || !toBuild.isEmpty else { return report }
        // The rows of a dropped index, and whatever an interrupted build left of one to build.
        let clear = Set((report.dropped + report.built).map { CompositeIndex.entryField(id: $0).canonicalString })
        for tenant in try LevelDBServerStore.tenantIDs(in: database) {
            let keys = TenantKeys(tenant)
            try deleteRows(of: clear, keys: keys, database: database, options: options)
            if !toBuild.isEmpty {
                report.documentsRead += try LevelDBIndexMigration.putRows(of: tenant, in: database, options: options,
                                                                          doing: "building composite indexes") {
                    keys.compositeRows(of: $0, in: toBuild)
                }
            }
        }
        var record = KeyEncoder()
        for id in declaredIDs.sorted() { record.append(string: id) }
        try LevelDBServerStore.run { try database.put(recordKey, record.bytes, options: options) }
        return report
    }

    /// Deletes the rows and markers of the indexes whose entry fields are `fields`.
    private static func deleteRows(of fields: Set<String>, keys: TenantKeys, database: Database, options: WriteOptions) throws(DocError) {
        for (space, marker) in [(keys.compositeIndexSpace, false), (keys.unindexedSpace, true)] {
            try LevelDBServerStore.run {
                var batch = WriteBatch()
                var entries = try database.entries(withPrefix: space).makeIterator()
                while let entry = try entries.nextEntry() {
                    let (field, kind) = try keys.indexField(ofRow: entry.key, marker: marker)
                    guard fields.contains(field), !marker || kind == .composite else { continue }
                    batch.delete(entry.key)
                    if batch.count >= deletesPerBatch {
                        try database.write(batch, options: options)
                        batch = WriteBatch()
                    }
                }
                if !batch.isEmpty { try database.write(batch, options: options) }
            }
        }
    }
}
