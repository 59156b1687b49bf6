import DocModel
import DocTestSupport
import LevelDB
import Testing
@testable import DocServer

/// What documents contribute to the query indexes, how commits keep the LevelDB index rows
/// in step with the documents, and the migration of a layout-1 directory.
@Suite struct FieldIndexTests {
    func document(_ path: String, _ fields: [String: Value]) -> Document {
        Document(key: T.key(path), data: ObjectValue(fields), version: SnapshotVersion(microseconds: 1))
    }

    func entries(_ fields: [String: Value]) -> DocumentIndexEntries { DocumentIndexEntries(document("items/x", fields)) }

    // MARK: Entries

    @Test func everyFieldPathAndArrayElementIsIndexed() {
        let entries = entries([
            "n": 1, "s": "a",
            "m": .map(["x": 2, "inner": .map(["y": true])]),
            "tags": .array(["a", "b", "a", 1.0, .integer(1)]),
        ])
        let values = Set(entries.entries.filter { $0.kind == .value }.map(\.field))
        #expect(values == ["n", "s", "m", "m.x", "m.inner", "m.inner.y", "tags"])
        let elements = entries.entries.filter { $0.kind == .arrayElement }
        // Equal elements once: "a" twice, and 1.0 / 1 encode alike.
        #expect(elements.count == 3)
        #expect(Set(elements.map(\.field)) == ["tags"])
        #expect(entries.entries.first { $0.field == "m.x" }?.value == Value.integer(2).indexEncoded())
        #expect(entries.unindexed.isEmpty)
    }

    @Test func fieldPathsAreCanonical() {
        let entries = entries(["a.b": 1, "m": .map(["c d": 2])])
        #expect(Set(entries.entries.map(\.field)) == ["`a.b`", "m", "m.`c d`"])
        // Nested under a quoted segment, with backquotes and backslashes to escape: the
        // path's own canonical form.
        let nested = self.entries(["q.r": .map(["s`t": .map(["u\\v": 1, "w": 2])])])
        let paths = [["q.r"], ["q.r", "s`t"], ["q.r", "s`t", "u\\v"], ["q.r", "s`t", "w"]]
        #expect(Set(nested.entries.map(\.field)) == Set(paths.map { FieldPath(unchecked: $0).canonicalString }))
        #expect(nested.entries.contains { $0.field == "`q.r`.`s\\`t`.`u\\\\v`" })
    }

    @Test func valuesTooLargeGetAMarkerInsteadOfAnEntry() {
        let large = Value.string(String(repeating: "x", count: DocumentIndexEntries.maxEncodedValueBytes))
        let entries = entries(["big": large, "m": .map(["big": large, "small": 1]), "tags": .array([large, large, "ok"])])
        #expect(Set(entries.unindexed) == [
            .init(kind: .value, field: "big"), .init(kind: .value, field: "m"), .init(kind: .value, field: "m.big"),
            .init(kind: .value, field: "tags"), .init(kind: .arrayElement, field: "tags"),
        ])
        #expect(Set(entries.entries.map(\.field)) == ["m.small", "tags"])
        #expect(entries.entries.allSatisfy { $0.value.count <= DocumentIndexEntries.maxEncodedValueBytes })
        // Exactly at the limit is still indexed.
        let edge = Value.string(String(repeating: "x", count: DocumentIndexEntries.maxEncodedValueBytes - 3))
        #expect(edge.indexEncoded().count == DocumentIndexEntries.maxEncodedValueBytes)
        #expect(self.entries(["e": edge]).unindexed.isEmpty)
    }

    // MARK: Maintenance

    func rows(_ store: LevelDBTenantStore, field: String, kind: IndexKind = .value, collection: String = "items") throws -> [[UInt8]] {
        let prefix = store.keys.fieldIndex(try ResourcePath(collection), field: field, kind: kind)
        return try store.database.entries(withPrefix: prefix).collect().map(\.key)
    }

    @Test func commitsReplaceTheRowsOfThePreviousVersion() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var model: [DocumentKey: Document] = [:]
        let key = T.key("items/x")
        func write(_ fields: [String: Value]?, batch: Int, checked: Bool) async throws {
            try await store.commitNext([DocumentWrite(key: key, document: fields.map { document("items/x", $0) })],
                                       batch: batch, checked: checked, model: &model)
            #expect(try store.storedIndexRows() == store.expectedIndexRows(model.values), "after batch \(batch)")
        }
        try await write(["a": 1, "tags": .array(["p", "q"])], batch: 1, checked: true)
        #expect(try rows(store, field: "a").count == 1)
        #expect(try rows(store, field: "tags", kind: .arrayElement).count == 2)

        // An update through the version check's read, then one without read versions.
        try await write(["a": 2, "tags": .array(["q"]), "b": "new"], batch: 2, checked: true)
        try await write(["a": 3, "tags": .array(["q"]), "b": "new"], batch: 3, checked: false)
        #expect(try rows(store, field: "tags", kind: .arrayElement).count == 1)
        #expect(try await store.query(T.target(try DocModel.Query(collection: "items").filter("a", .equal, 2)), limit: nil).documents.isEmpty)
        #expect(try await store.query(T.target(try DocModel.Query(collection: "items").filter("a", .equal, 3)), limit: nil).documents.count == 1)

        // A tombstone is indexed (with its deletedAt), and hidden unless asked for.
        try await write(["a": 3, "deletedAt": .timestamp(Timestamp(microseconds: 5))], batch: 4, checked: true)
        #expect(try rows(store, field: "deletedAt").count == 1)
        let byA = try DocModel.Query(collection: "items").filter("a", .equal, 3)
        #expect(try await store.query(T.target(byA), limit: nil).documents.isEmpty)
        #expect(try await store.query(T.target(byA.includingDeleted()), limit: nil).documents.count == 1)

        // A value too large to index, then back to a small one.
        try await write(["a": .string(String(repeating: "z", count: 2_000))], batch: 5, checked: true)
        #expect(try rows(store, field: "a").isEmpty)
        let large = try DocModel.Query(collection: "items").order(by: "a").limit(to: 5)
        #expect(try await store.query(T.target(large), limit: 5).documents.map(\.key) == [key])
        try await write(["a": 1], batch: 6, checked: false)

        // A hard delete removes every row.
        try await write(nil, batch: 7, checked: true)
        #expect(try store.storedIndexRows().isEmpty)
    }

    @Test func aBatchWritingOneDocumentTwiceKeepsTheLastRows() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var model: [DocumentKey: Document] = [:]
        let key = T.key("items/x")
        try await store.commitNext([DocumentWrite(key: key, document: document("items/x", ["a": 1]))], batch: 1, model: &model)
        try await store.commitNext([
            DocumentWrite(key: key, document: document("items/x", ["a": 2])),
            DocumentWrite(key: key, document: document("items/x", ["a": 3])),
        ], batch: 2, checked: false, model: &model)
        #expect(try store.storedIndexRows() == store.expectedIndexRows(model.values))
    }

    @Test func rejectedAndDuplicateBatchesWriteNoRows() async throws {
        let server = TestServer()
        let store = try server.tenantStore("acme")
        var model: [DocumentKey: Document] = [:]
        try await store.commitNext([DocumentWrite(key: T.key("items/x"), document: document("items/x", ["a": 1]))], batch: 1, model: &model)
        let before = try store.storedIndexRows()
        // A stale read version aborts the commit: nothing of it is stored.
        let version = SnapshotVersion(microseconds: try await store.state().lastVersion.microseconds + 1)
        await #expect(throws: DocError.self) {
            try await store.commit(CommitRequest(
                outcome: BatchOutcome(batch: BatchKey(clientID: "test", batchID: 2), uid: "u", digest: 0, recordedAt: 1,
                                      result: .committed(version: version, results: [])),
                writes: [DocumentWrite(key: T.key("items/x"), document: document("items/x", ["a": 9]))],
                readVersions: [T.key("items/x"): .none]))
        }
        #expect(try store.storedIndexRows() == before)
        // Batch 1 again, with another document: a duplicate, nothing of it is stored.
        let again = SnapshotVersion(microseconds: try await store.state().lastVersion.microseconds + 1)
        let duplicate = try await store.commit(CommitRequest(
            outcome: BatchOutcome(batch: BatchKey(clientID: "test", batchID: 1), uid: "u", digest: 0, recordedAt: 1,
                                  result: .committed(version: again, results: [])),
            writes: [DocumentWrite(key: T.key("items/y"), document: Document(key: T.key("items/y"), data: ObjectValue(["a": 2]), version: again))]))
        guard case .duplicate = duplicate else {
            Issue.record("batch 1 sent again was not a duplicate: \(duplicate)")
            return
        }
        #expect(try store.storedIndexRows() == before)
    }

    // MARK: Migration

    static func attachment(_ n: Int) -> AttachmentID { AttachmentID(digest: [UInt8](repeating: UInt8(n), count: 32)) }

    /// Layout 1 lacks every index row; layout 2 the attachment references.
    @Test(arguments: ["1", "2"])
    func anOlderLayoutIsIndexedWhenOpened(layout: String) async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        var models: [String: [DocumentKey: Document]] = [:]
        do {
            let store = try LevelDBServerStore.open(directory: directory.path, options: .init(syncWrites: false))
            for tenant in ["acme", "globex"] {
                let tenantStore = try store.tenantStore(TenantID(tenant))
                var model: [DocumentKey: Document] = [:]
                for chunk in 0..<3 {
                    let writes = (0..<700).map { i in
                        let path = "items/\(tenant)-\(chunk * 700 + i)"
                        return DocumentWrite(key: T.key(path), document: document(path, [
                            "a": .integer(Int64(i % 7)), "tags": .array([.integer(Int64(i % 3))]),
                            "big": i == 5 ? .string(String(repeating: "b", count: 2_000)) : .null,
                            // Attachments shared between documents, some in tombstones.
                            // (attachment 10 only in tombstones: not referenced)
                            "photo": i % 4 == 0 ? .attachment(Self.attachment(i % 8 == 0 ? 10 : i % 10)) : .null,
                            tombstoneField: i % 8 == 0 ? .integer(1) : .null,
                        ]))
                    }
                    try await tenantStore.commitNext(writes, batch: chunk + 1, checked: false, model: &model)
                }
                models[tenant] = model
            }
            // Back to the older layout: without the rows it lacks.
            var batch = WriteBatch()
            for tenant in ["acme", "globex"] {
                let tenantStore = try store.tenantStore(TenantID(tenant))
                let references = tenantStore.keys.prefix + Array("r".utf8)
                let rows = try tenantStore.storedIndexRows()
                #expect(rows.contains { $0.starts(with: references) })
                for key in rows where layout == "1" || key.starts(with: references) { batch.delete(key) }
            }
            batch.put([TenantKeys.globalMarker] + Array("format".utf8), Array(layout.utf8))
            try store.database.write(batch)
            await store.close()
        }
        let store = try LevelDBServerStore.open(directory: directory.path, options: .init(syncWrites: false))
        defer { store.database.close() }
        #expect(try store.database.get([TenantKeys.globalMarker] + Array("format".utf8)) == Array("3".utf8))
        for (tenant, model) in models {
            let tenantStore = try store.tenantStore(TenantID(tenant))
            #expect(try tenantStore.storedIndexRows() == tenantStore.expectedIndexRows(model.values))
            let ids = (0..<12).map(Self.attachment)
            let live = Set(model.values.filter { !$0.isTombstone }.compactMap { document -> AttachmentID? in
                if case .attachment(let id)? = document.data["photo"] { return id } else { return nil }
            })
            #expect(live.count == 5)
            #expect(try await tenantStore.referencedAttachments(among: ids) == live)
            let target = T.target(try DocModel.Query(collection: "items").filter("a", .equal, 3).order(by: "big").limit(to: 10))
            #expect(try await tenantStore.query(target, limit: 10).documents == fullScan(model.values, target, limit: 10))
        }
    }

    @Test func anUnknownLayoutIsRefused() throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        do {
            let database = try Database.open(path: directory.path, options: LevelDB.Options(createIfMissing: true))
            try database.put([TenantKeys.globalMarker] + Array("format".utf8), Array("9".utf8))
            database.close()
        }
        #expect(throws: DocError.self) { try LevelDBServerStore.open(directory: directory.path) }
        do {
            _ = try LevelDBServerStore.open(directory: directory.path)
        } catch {
            #expect(error.code == .failedPrecondition)
            #expect(error.message.contains("layout 9"))
        }
    }
}
