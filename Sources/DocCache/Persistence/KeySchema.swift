internal import DocModel

// The LevelDB key spaces of a doccache store (schema version 4: the key spaces of schema 1;
// schema 2 added batch-reference overlay records, see DocumentRecord.swift; schema 3 the
// composite-index tables 0x16–0x18; schema 4 the overlay index, tables 0x31–0x33).
//
// Every key starts with one table tag byte, followed by components written with DocModel's
// order-preserving `KeyEncoder` (strings, Int64s, resource paths, index values), so LevelDB's
// bytewise order is the component-wise order and every table is one contiguous key range.
// "path(p)" is a ResourcePath component (segment by segment, a path before its extensions);
// "string(s)" a UTF-8 string component; "int(n)" a signed integer component; "value(v)" an
// index-encoded Value (`Value.indexEncoded()`, Firestore's cross-type order). Values are
// encoded as in ByteCoding.swift / MutationCoding.swift / TargetCoding.swift.
//
//  tag   table                   key components                        value
//  0x01  globals                 string(name)                          per name, below
//          "schema_version"                                            zigzag varint: the schema version
//          "client_id"                                                 UTF-8: the store's random client id
//          "next_batch_id"                                             zigzag varint: above every batch id
//                                                                      removed from a queue (written
//                                                                      when a batch is removed; the store
//                                                                      resumes above it and above every
//                                                                      stored batch)
//  0x10  remote documents        path(document)                        document record: format, flags,
//                                                                      zigzag read time, MaybeDocument
//                                                                      (DocModel binary)
//  0x11  read-time index         path(collection), int(read time µs),  empty
//                                string(document id)
//  0x12  collection-group index  string(collection id), path(document) empty
//  0x13  field index             path(collection), string(field path), empty
//                                value(v), string(document id)
//  0x14  array index             path(collection), string(field path), empty
//                                value(element), string(document id)
//  0x15  unindexed values        path(collection), string(field path), empty
//                                int(kind: 0 field, 1 array element),
//                                string(document id)
//  0x16  composite index         string(index id), path(collection),   empty
//                                value(v1, dir1) … value(vn, dirn),
//                                string(document id, dirn)
//  0x17  composite index         string(index id)                      StoredCompositeIndex record: format,
//        definitions                                                   state (building/complete),
//                                                                      collection id, fields
//  0x18  composite unindexed     string(index id), path(collection),   empty
//                                string(document id)
//  0x20  mutations               string(user), int(batch id)           mutation batch
//  0x21  document → batch        string(user), path(document),         empty
//                                int(batch id)
//  0x22  mutation queues         string(user)                          queue record: format, bytes
//                                                                      last stream token
//  0x23  failed writes           string(user), int(batch id)           FailedWriteRecord.encoded()
//  0x24  batch deliveries        string(user), int(batch id)           BatchDelivery.encoded(): attempts,
//                                                                      last attempt, last error
//  0x25  sync status             string(user)                          format, flag + timestamp
//                                                                      lastSyncedAt
//  0x26  attachments             string(id hex)                        AttachmentRecord.encoded()
//  0x30  overlays                string(user), path(collection),       overlay record: format, flags,
//                                string(document id)                   zigzag largest batch id,
//                                                                      MaybeDocument
//  0x31  overlay index           string(user), then a whole key of     empty
//                                0x13, 0x14, 0x15, 0x16 or 0x18 (its
//                                tag included) for the overlay's
//                                document
//  0x32  overlay index rows      string(user), path(document)          the document's 0x31 rows as they
//                                                                      follow the user: varint count,
//                                                                      length-prefixed keys
//  0x33  overlay index state     string(user)                          zigzag varint: the watermark, the
//                                                                      batch id through which every
//                                                                      overlay is indexed
//  0x40  targets                 int(target id)                        target data
//  0x41  target canonical ids    string(canonical id), int(target id)  empty
//  0x42  target → document       int(target id), path(document)        empty
//  0x43  document → target       path(document), int(target id)        empty
//  0x44  target metadata         (none)                                format, zigzag highest target id,
//                                                                      zigzag highest sequence number,
//                                                                      zigzag last remote snapshot µs,
//                                                                      varint target count
//  0x50  LRU sentinels           path(document)                        zigzag listen sequence number
//  0x60  bundles                 string(bundle id)                     bundle record: format, zigzag
//                                                                      create time µs, varint version,
//                                                                      varint total documents, zigzag
//                                                                      total bytes, string bundle id
//                                                                      (BundleCache.swift)
//  0x61  named queries           string(name)                          named-query record: format, the
//                                                                      namedQuery element's JSON body
//
// Field paths in keys are their canonical strings (`FieldPath.canonicalString`, which is
// injective). The field and array indexes hold entries only for found documents; a value
// whose index encoding exceeds `DocumentIndexEntries.maxEncodedValueBytes` gets a row in 0x15
// instead (so a query engine can tell the index is incomplete for that field).
// A composite index (0x16) holds a row per found document that has every field of the index,
// each value in the field's direction ("dir": descending values are the inverted ascending
// encoding) and the document id in the last field's direction, so a forward scan is the order
// of a query that orders by the index's trailing fields as declared; a reverse scan the
// opposite order. A document with a value too large to index in one of the fields gets a 0x18
// row instead.
// The overlay index (0x31) holds the same rows for the local views of documents with pending
// writes, per user, under a prefix of the user: every remote index scan can run over it by
// putting that prefix in front. Its rows are exact for every overlay except those of batches
// above the watermark (0x33), which a query reads directly (docs/persistence.md, "The
// overlay index").

/// The key spaces of the store: table tags and the key builders and parsers of every table.
/// The layout is documented at the top of this file and in `docs/persistence.md`.
enum KeySchema {
    /// The leading byte of every key of a table.
    enum Table: UInt8, CaseIterable, Sendable {
        case globals = 0x01
        case remoteDocuments = 0x10
        case readTimeIndex = 0x11
        case collectionGroupIndex = 0x12
        case fieldIndex = 0x13
        case arrayIndex = 0x14
        case unindexedValues = 0x15
        case compositeIndex = 0x16
        case compositeIndexDefinitions = 0x17
        case compositeUnindexed = 0x18
        case mutations = 0x20
        case documentMutations = 0x21
        case mutationQueues = 0x22
        case failedWrites = 0x23
        case batchDeliveries = 0x24
        case syncStatus = 0x25
        case attachments = 0x26
        case overlays = 0x30
        case overlayIndex = 0x31
        case overlayIndexRows = 0x32
        case overlayIndexState = 0x33
        case targets = 0x40
        case targetCanonicalIDs = 0x41
        case targetDocuments = 0x42
        case documentTargets = 0x43
        case targetMetadata = 0x44
        case lruSentinels = 0x50
        case bundles = 0x60
        case namedQueries = 0x61

        /// The table's name, for diagnostics and size breakdowns.
        var name: String {
            switch self {
            case .globals: return "globals"
            case .remoteDocuments: return "remote_documents"
            case .readTimeIndex: return "read_time_index"
            case .collectionGroupIndex: return "collection_group_index"
            case .fieldIndex: return "field_index"
            case .arrayIndex: return "array_index"
            case .unindexedValues: return "unindexed_values"
            case .compositeIndex: return "composite_index"
            case .compositeIndexDefinitions: return "composite_index_definitions"
            case .compositeUnindexed: return "composite_unindexed"
            case .mutations: return "mutations"
            case .documentMutations: return "document_mutations"
            case .mutationQueues: return "mutation_queues"
            case .failedWrites: return "failed_writes"
            case .batchDeliveries: return "batch_deliveries"
            case .syncStatus: return "sync_status"
            case .attachments: return "attachments"
            case .overlays: return "overlays"
            case .overlayIndex: return "overlay_index"
            case .overlayIndexRows: return "overlay_index_rows"
            case .overlayIndexState: return "overlay_index_state"
            case .targets: return "targets"
            case .targetCanonicalIDs: return "target_canonical_ids"
            case .targetDocuments: return "target_documents"
            case .documentTargets: return "document_targets"
            case .targetMetadata: return "target_metadata"
            case .lruSentinels: return "lru_sentinels"
            case .bundles: return "bundles"
            case .namedQueries: return "named_queries"
            }
        }

        /// Every key of the table starts with this.
        var prefix: [UInt8] { [rawValue] }
    }

    /// The global holding the schema version.
    static let schemaVersionName = "schema_version"
    /// The global holding the client id.
    static let clientIDName = "client_id"
    /// The global holding the batch-id counter.
    static let nextBatchIDName = "next_batch_id"

    /// The path-segment marker of the ordered path encoding: a collection's prefix followed by
    /// it is the prefix of every key of a document directly in (or below) the collection.
    static let pathSegmentMarker: UInt8 = 0x02

    // MARK: Globals

    /// The key of the global row `name`.
    static func global(_ name: String) -> [UInt8] {
        var k = KeyEncoder(prefix: Table.globals.prefix)
        k.append(string: name)
        return k.bytes
    }

    // MARK: Bundles

    /// The row of a loaded bundle's metadata.
    static func bundle(_ id: String) -> [UInt8] { stringKey(.bundles, id) }

    /// The row of a named query saved from a bundle.
    static func namedQuery(_ name: String) -> [UInt8] { stringKey(.namedQueries, name) }

    // MARK: Remote documents

    /// The row of a remote document.
    static func remoteDocument(_ key: DocumentKey) -> [UInt8] {
        var k = KeyEncoder(prefix: Table.remoteDocuments.prefix)
        k.append(key: key)
        return k.bytes
    }

    /// The prefix of the remote-document keys of every document directly in `collection`
    /// (and, further on, of its sub-collections' documents).
    static func remoteDocumentsPrefix(inCollection collection: ResourcePath) -> [UInt8] {
        collectionChildrenPrefix(table: .remoteDocuments, collection)
    }

    // MARK: Read-time index

    /// The prefix of the read-time rows of `collection`.
    static func readTimePrefix(_ collection: ResourcePath) -> [UInt8] {
        var k = KeyEncoder(prefix: Table.readTimeIndex.prefix)
        k.append(path: collection)
        return k.bytes
    }

    /// The read-time row of a document: (collection, read time, document id).
    static func readTime(_ collection: ResourcePath, _ readTime: SnapshotVersion, _ documentID: String) -> [UInt8] {
        var k = KeyEncoder(prefix: readTimePrefix(collection))
        k.append(int64: readTime.microseconds)
        k.append(string: documentID)
        return k.bytes
    }

    /// Decodes a read-time index key: the collection, the read time and the document id.
    static func decodeReadTime(_ bytes: [UInt8]) throws(DocError) -> (ResourcePath, SnapshotVersion, String) {
        var d = KeyDecoder(bytes, offset: 1)
        let collection = try d.readPath()
        let time = try d.readInt64()
        let id = try d.readString()
        try d.finish()
        return (collection, SnapshotVersion(microseconds: time), id)
    }

    // MARK: Collection-group index

    /// The prefix of the collection-group rows of the collection id `group`.
    static func collectionGroupPrefix(_ group: String) -> [UInt8] {
        var k = KeyEncoder(prefix: Table.collectionGroupIndex.prefix)
        k.append(string: group)
        return k.bytes
    }

    /// The collection-group row of a document.
    static func collectionGroup(_ key: DocumentKey) -> [UInt8] {
        var k = KeyEncoder(prefix: collectionGroupPrefix(key.collectionGroup))
        k.append(key: key)
        return k.bytes
    }

    /// The document of a collection-group row.
    static func decodeCollectionGroup(_ bytes: [UInt8]) throws(DocError) -> DocumentKey {
        var d = KeyDecoder(bytes, offset: 1)
        _ = try d.readString()
        let key = try d.readKey()
        try d.finish()
        return key
    }

    // MARK: Field, array and unindexed-value indexes

    /// The prefix of a (collection, field) in the field index, array index or unindexed
    /// values table.
    static func fieldPrefix(_ table: Table, _ collection: ResourcePath, _ field: FieldPath) -> [UInt8] {
        var k = KeyEncoder(prefix: table.prefix)
        k.append(path: collection)
        k.append(string: field.canonicalString)
        return k.bytes
    }

    /// The document id at the end of an index entry whose prefix has `prefixCount` bytes, and
    /// the offset where the id starts (after the value).
    static func decodeIndexEntry(_ bytes: [UInt8], prefixCount: Int) throws(DocError) -> (id: String, idOffset: Int) {
        var d = KeyDecoder(bytes, offset: prefixCount)
        _ = try d.readIndexValue()
        let idOffset = d.offset
        let id = try d.readString()
        try d.finish()
        return (id, idOffset)
    }

    /// The kind and document id of an unindexed-value row whose prefix has `prefixCount` bytes.
    static func decodeUnindexedEntry(_ bytes: [UInt8], prefixCount: Int) throws(DocError) -> (Int64, String) {
        var d = KeyDecoder(bytes, offset: prefixCount)
        let kind = try d.readInt64()
        let id = try d.readString()
        try d.finish()
        return (kind, id)
    }

    // MARK: Composite indexes

    /// The prefix of a composite index's rows for the collection `collection`.
    static func compositePrefix(_ table: Table, _ indexID: String, _ collection: ResourcePath) -> [UInt8] {
        var k = KeyEncoder(prefix: table.prefix)
        k.append(string: indexID)
        k.append(path: collection)
        return k.bytes
    }

    /// The prefix of every row of a composite index (in `table`: 0x16 or 0x18).
    static func compositeIndexPrefix(_ table: Table, _ indexID: String) -> [UInt8] {
        var k = KeyEncoder(prefix: table.prefix)
        k.append(string: indexID)
        return k.bytes
    }

    /// The row of a composite index's definition.
    static func compositeIndexDefinition(_ indexID: String) -> [UInt8] {
        compositeIndexPrefix(.compositeIndexDefinitions, indexID)
    }

    /// The document id at the end of a composite index row of `index` whose first
    /// `prefixCount` bytes are its prefix (index id and collection) and the values of its
    /// first `knownFields` fields (a scan's leading values, which need no decoding).
    /// Also gives the offset where the id starts (after the values).
    static func decodeCompositeEntryDocumentID(
        _ bytes: [UInt8], prefixCount: Int, knownFields: Int, index: CompositeIndex
    ) throws(DocError) -> (id: String, idOffset: Int) {
        var d = KeyDecoder(bytes, offset: prefixCount)
        for field in index.fields.dropFirst(knownFields) { _ = try d.readIndexValue(descending: field.direction == .descending) }
        let idOffset = d.offset
        let id = try d.readString(descending: index.documentIDDirection == .descending)
        try d.finish()
        return (id, idOffset)
    }

    /// The document id that ends a row whose prefix has `prefixCount` bytes: a
    /// composite-unindexed row after its (index, collection) prefix, an overlay row after its
    /// (user, collection) prefix.
    static func decodeTrailingDocumentID(_ bytes: [UInt8], prefixCount: Int) throws(DocError) -> String {
        var d = KeyDecoder(bytes, offset: prefixCount)
        let id = try d.readString()
        try d.finish()
        return id
    }

    // MARK: Mutation queues

    /// `table` ‖ string(`name`): a per-user row or the prefix of a user's rows, a bundle's
    /// or a named query's row.
    private static func stringKey(_ table: Table, _ name: String) -> [UInt8] {
        var k = KeyEncoder(prefix: table.prefix)
        k.append(string: name)
        return k.bytes
    }

    /// `table` ‖ string(`user`) ‖ int(`batchID`), built in one encoder (the local-write path
    /// makes one per write).
    private static func userBatchKey(_ table: Table, _ user: String, _ batchID: BatchID) -> [UInt8] {
        var k = KeyEncoder(prefix: table.prefix)
        k.append(string: user)
        k.append(int64: Int64(batchID))
        return k.bytes
    }

    /// The batch id of a key made by ``userBatchKey(_:_:_:)``.
    static func batchID(ofUserBatchKey bytes: [UInt8]) throws(DocError) -> BatchID {
        var d = KeyDecoder(bytes, offset: 1)
        _ = try d.readString()
        let id = try d.readInt64()
        try d.finish()
        return BatchID(id)
    }

    /// The prefix of the batches of `user`.
    static func mutationsPrefix(_ user: String) -> [UInt8] { stringKey(.mutations, user) }

    /// The row of batch `batchID` of `user`.
    static func mutation(_ user: String, _ batchID: BatchID) -> [UInt8] { userBatchKey(.mutations, user, batchID) }

    /// The prefix of the document → batch rows of `user`.
    static func documentMutationsPrefix(_ user: String) -> [UInt8] { stringKey(.documentMutations, user) }

    /// The prefix of the document → batch rows of `key` for `user`.
    static func documentMutationsPrefix(_ user: String, _ key: DocumentKey) -> [UInt8] {
        var k = KeyEncoder(prefix: documentMutationsPrefix(user))
        k.append(key: key)
        return k.bytes
    }

    /// The document → batch row of (`user`, `key`, `batchID`).
    static func documentMutation(_ user: String, _ key: DocumentKey, _ batchID: BatchID) -> [UInt8] {
        // On the local-write path: one encoder (`documentMutationsPrefix(user, key)`, then the id).
        var k = KeyEncoder(prefix: Table.documentMutations.prefix)
        k.append(string: user)
        k.append(key: key)
        k.append(int64: Int64(batchID))
        return k.bytes
    }

    /// The prefix of the document → batch rows of the documents directly in (or below)
    /// `collection`.
    static func documentMutationsPrefix(_ user: String, inCollection collection: ResourcePath) -> [UInt8] {
        var k = KeyEncoder(prefix: documentMutationsPrefix(user))
        appendCollectionChildren(collection, to: &k)
        return k.bytes
    }

    /// Decodes a document → batch row: the document path (any depth) and the batch id.
    static func decodeDocumentMutation(_ bytes: [UInt8]) throws(DocError) -> (ResourcePath, BatchID) {
        var d = KeyDecoder(bytes, offset: 1)
        _ = try d.readString()
        let path = try d.readPath()
        let id = try d.readInt64()
        try d.finish()
        return (path, BatchID(id))
    }

    /// The prefix of the failed writes of `user` (batches the server rejected, kept for the
    /// user; see ``FailedWriteStore``).
    static func failedWritesPrefix(_ user: String) -> [UInt8] { stringKey(.failedWrites, user) }

    /// The failed write of `user` made from rejected batch `batchID`.
    static func failedWrite(_ user: String, _ batchID: BatchID) -> [UInt8] { userBatchKey(.failedWrites, user, batchID) }

    /// The prefix of the delivery records of `user`'s queued batches (attempts and last error,
    /// see ``BatchDeliveryStore``).
    static func batchDeliveriesPrefix(_ user: String) -> [UInt8] { stringKey(.batchDeliveries, user) }

    /// The delivery record of `user`'s batch `batchID`.
    static func batchDelivery(_ user: String, _ batchID: BatchID) -> [UInt8] { userBatchKey(.batchDeliveries, user, batchID) }

    /// The sync-status row of `user` (when its queue was last emptied by the server).
    static func syncStatus(_ user: String) -> [UInt8] { stringKey(.syncStatus, user) }

    /// The prefix of the attachment records.
    static let attachmentsPrefix: [UInt8] = Table.attachments.prefix

    /// The record of attachment `id`.
    static func attachment(_ id: AttachmentID) -> [UInt8] {
        var k = KeyEncoder(prefix: attachmentsPrefix)
        k.append(string: id.hex)
        return k.bytes
    }

    /// The id of an attachment record's key.
    static func attachmentID(_ bytes: [UInt8]) throws(DocError) -> AttachmentID {
        var d = KeyDecoder(bytes, offset: 1)
        let hex = try d.readString()
        try d.finish()
        do { return try AttachmentID(hex) } catch { throw DocError(.dataLoss, "bad attachment key: \(error.message)") }
    }

    /// The queue row of `user` (its last stream token).
    static func mutationQueue(_ user: String) -> [UInt8] { stringKey(.mutationQueues, user) }

    /// The leading string component after the tag byte (the user of a mutation, document →
    /// batch, queue or overlay key), and the key's prefix up to and including it.
    static func decodeLeadingString(_ bytes: [UInt8]) throws(DocError) -> (String, Int) {
        var d = KeyDecoder(bytes, offset: 1)
        let s = try d.readString()
        return (s, d.offset)
    }

    // MARK: Overlays

    /// The prefix of the overlays of `user`.
    static func overlaysPrefix(_ user: String) -> [UInt8] { stringKey(.overlays, user) }

    /// The prefix of the overlays of `user` in `collection` (direct children only).
    static func overlaysPrefix(_ user: String, collection: ResourcePath) -> [UInt8] {
        var k = KeyEncoder(prefix: overlaysPrefix(user))
        k.append(path: collection)
        return k.bytes
    }

    /// The overlay row of `key` for `user`.
    static func overlay(_ user: String, _ key: DocumentKey) -> [UInt8] {
        // On the local-write path: one encoder, and the collection path is not built
        // (`overlaysPrefix(user, collection: key.collectionPath)`, then the id).
        var k = KeyEncoder(prefix: Table.overlays.prefix)
        k.append(string: user)
        k.append(pathSegments: key.path.segments.dropLast())
        k.append(string: key.documentID)
        return k.bytes
    }

    /// What every overlay index row of `user` starts with: put in front of a remote index key
    /// or scan prefix, it names the same row of the user's overlay index.
    static func overlayIndexSpace(_ user: String) -> [UInt8] { stringKey(.overlayIndex, user) }

    /// The row listing the overlay index rows of `key`'s overlay for `user`.
    static func overlayIndexRows(_ user: String, _ key: DocumentKey) -> [UInt8] {
        var k = KeyEncoder(prefix: Table.overlayIndexRows.prefix)
        k.append(string: user)
        k.append(key: key)
        return k.bytes
    }

    /// The row of `user`'s overlay index watermark.
    static func overlayIndexState(_ user: String) -> [UInt8] { stringKey(.overlayIndexState, user) }

    /// The user and document of an overlay row.
    static func decodeOverlay(_ bytes: [UInt8]) throws(DocError) -> (String, DocumentKey) {
        var d = KeyDecoder(bytes, offset: 1)
        let user = try d.readString()
        let collection = try d.readPath()
        let id = try d.readString()
        try d.finish()
        guard collection.count % 2 == 1 else {
            throw DocError(.dataLoss, "corrupt overlay key: \(collection) is not a collection path")
        }
        return (user, DocumentKey(unchecked: collection, id: id))
    }

    // MARK: Targets

    /// The row of target `id`.
    static func target(_ id: TargetID) -> [UInt8] {
        var k = KeyEncoder(prefix: Table.targets.prefix)
        k.append(int64: Int64(id))
        return k.bytes
    }

    /// The prefix of the canonical-id rows of `canonicalID` (exactly that id: strings are terminated).
    static func canonicalIDPrefix(_ canonicalID: String) -> [UInt8] {
        var k = KeyEncoder(prefix: Table.targetCanonicalIDs.prefix)
        k.append(string: canonicalID)
        return k.bytes
    }

    /// The canonical-id row of target `id`.
    static func canonicalID(_ canonicalID: String, _ id: TargetID) -> [UInt8] {
        var k = KeyEncoder(prefix: canonicalIDPrefix(canonicalID))
        k.append(int64: Int64(id))
        return k.bytes
    }

    /// The target id of a canonical-id row.
    static func decodeCanonicalID(_ bytes: [UInt8]) throws(DocError) -> TargetID {
        var d = KeyDecoder(bytes, offset: 1)
        _ = try d.readString()
        let id = try d.readInt64()
        try d.finish()
        guard let t = TargetID(exactly: id) else { throw DocError(.dataLoss, "corrupt canonical-id key: id \(id)") }
        return t
    }

    /// The prefix of the target → document rows of target `id`.
    static func targetDocumentsPrefix(_ id: TargetID) -> [UInt8] {
        var k = KeyEncoder(prefix: Table.targetDocuments.prefix)
        k.append(int64: Int64(id))
        return k.bytes
    }

    /// The target → document row of (`id`, `key`).
    static func targetDocument(_ id: TargetID, _ key: DocumentKey) -> [UInt8] {
        var k = KeyEncoder(prefix: targetDocumentsPrefix(id))
        k.append(key: key)
        return k.bytes
    }

    /// The target id and document of a target → document row.
    static func decodeTargetDocument(_ bytes: [UInt8]) throws(DocError) -> (TargetID, DocumentKey) {
        var d = KeyDecoder(bytes, offset: 1)
        let id = try d.readInt64()
        let key = try d.readKey()
        try d.finish()
        guard let t = TargetID(exactly: id) else { throw DocError(.dataLoss, "corrupt target-document key: id \(id)") }
        return (t, key)
    }

    /// The prefix of the document → target rows of `key`.
    static func documentTargetsPrefix(_ key: DocumentKey) -> [UInt8] {
        var k = KeyEncoder(prefix: Table.documentTargets.prefix)
        k.append(key: key)
        return k.bytes
    }

    /// The document → target row of (`key`, `id`).
    static func documentTarget(_ key: DocumentKey, _ id: TargetID) -> [UInt8] {
        var k = KeyEncoder(prefix: documentTargetsPrefix(key))
        k.append(int64: Int64(id))
        return k.bytes
    }

    /// The key of the target metadata row.
    static let targetMetadata: [UInt8] = Table.targetMetadata.prefix

    // MARK: LRU

    /// The LRU sentinel row of a document.
    static func sentinel(_ key: DocumentKey) -> [UInt8] {
        var k = KeyEncoder(prefix: Table.lruSentinels.prefix)
        k.append(key: key)
        return k.bytes
    }

    /// The document of an LRU sentinel row.
    static func decodeSentinel(_ bytes: [UInt8]) throws(DocError) -> DocumentKey {
        var d = KeyDecoder(bytes, offset: 1)
        let key = try d.readKey()
        try d.finish()
        return key
    }

    // MARK: Helpers

    /// `table` + the segments of `collection` + the segment marker: the prefix of the keys of
    /// the documents directly in (or below) `collection`, in tables keyed by document path.
    static func collectionChildrenPrefix(table: Table, _ collection: ResourcePath) -> [UInt8] {
        var k = KeyEncoder(prefix: table.prefix)
        appendCollectionChildren(collection, to: &k)
        return k.bytes
    }

    /// Appends the path encoding of `collection` without its end marker, then the segment
    /// marker: every path with `collection` as a proper prefix starts with these bytes.
    private static func appendCollectionChildren(_ collection: ResourcePath, to k: inout KeyEncoder) {
        var encoded = KeyEncoder()
        encoded.append(path: collection)
        var bytes = encoded.bytes
        bytes.removeLast()  // the path-end marker
        bytes.append(pathSegmentMarker)
        k.append(raw: bytes)
    }

    /// The exclusive upper bound of the keys starting with `prefix`.
    static func prefixEnd(_ prefix: [UInt8]) -> [UInt8] {
        OrderedCode.prefixSuccessor(prefix) ?? [0xFF, 0xFF, 0xFF, 0xFF]
    }
}
