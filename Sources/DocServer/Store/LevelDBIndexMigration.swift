internal import DocModel
internal import LevelDB

/// Migrates a ``LevelDBServerStore`` directory to the current layout when it is opened: builds
/// the index rows the stored layout lacks for every stored document, tenant by tenant, in
/// write batches of ``documentsPerBatch`` documents, then records the current layout.
///
/// - from layout 1: the query index rows (``TenantKeys`` spaces `i`, `a`, `u`) and the
///   attachment references (`r`);
/// - from layout 2: the attachment references.
///
/// Safe to interrupt: the layout is recorded last (in the final batch), so a crash leaves the
/// old layout and the next open builds the rows again — writing a row twice is harmless, and
/// no commit runs before the store is open. It reads every document once: minutes for tens
/// of millions of documents, seconds for the usual sizes.
enum LevelDBIndexMigration {
    /// The layouts this migration reads.
    static let fromVersions = ["1", "2"]
    /// Documents indexed per write batch.
    static let documentsPerBatch = 1_000

    /// Builds the rows layout `stored` lacks for every document and records the current
    /// layout under `formatKey`; returns how many documents were read.
    @discardableResult
    static func migrate(_ database: Database, from stored: String, formatKey: [UInt8], options: WriteOptions) throws(DocError) -> Int {
        precondition(fromVersions.contains(stored), "no migration from layout \(stored)")
        var indexed = 0
        for tenant in try LevelDBServerStore.tenantIDs(in: database) {
            let keys = TenantKeys(tenant)
            indexed += try putRows(of: tenant, in: database, options: options,
                                   doing: "migrating the store to layout \(LevelDBServerStore.formatVersion)") { document in
                stored == "1" ? keys.indexRows(of: document) : keys.attachmentReferenceRows(of: document)
            }
        }
        try LevelDBServerStore.run {
            try database.put(formatKey, Array(LevelDBServerStore.formatVersion.utf8), options: options)
        }
        return indexed
    }

    /// Puts the rows `rows` gives for every stored document of `tenant`, in write batches of
    /// ``documentsPerBatch`` documents; returns how many documents were read. `doing` names
    /// the pass in the error about a document that cannot be read.
    static func putRows(
        of tenant: TenantID, in database: Database, options: WriteOptions, doing: String, _ rows: (Document) -> [[UInt8]]
    ) throws(DocError) -> Int {
        var read = 0
        try LevelDBServerStore.run {
            var batch = WriteBatch()
            var inBatch = 0
            var entries = try database.entries(withPrefix: TenantKeys(tenant).documentSpace).makeIterator()
            while let entry = try entries.nextEntry() {
                let document: Document
                do throws(DocError) {
                    document = try Document(binary: entry.value)
                } catch {
                    throw DocError(.dataLoss, "\(doing): a document of tenant \(tenant) cannot be read: \(error.message)")
                }
                for row in rows(document) { batch.put(row, []) }
                inBatch += 1
                read += 1
                if inBatch == documentsPerBatch {
                    try database.write(batch, options: options)
                    batch = WriteBatch()
                    inBatch = 0
                }
            }
            if !batch.isEmpty { try database.write(batch, options: options) }
        }
        return read
    }
}
