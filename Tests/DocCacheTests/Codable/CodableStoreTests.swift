import DocModel
import DocTestSupport
import Foundation
import Testing
@testable import DocCache

/// The `from:` writes and `as:` reads through a real store (LevelDB in a temporary directory).
@Suite("Codable through the store")
struct CodableStoreTests {
    static func invoice(_ number: String, note: String? = nil) throws -> Invoice {
        Invoice(
            id: nil, number: number, status: .sent, currency: .eur, issuedAt: Date(timeIntervalSince1970: 1_714_564_800.5),
            dueAt: nil, customer: try DocumentKey("customers/c1"),
            lines: [InvoiceLine(description: "Consulting", quantity: 3, unitPrice: Decimal(string: "1234.56")!,
                                taxRate: Decimal(string: "0.077")!, discount: nil, tags: ["q2"])],
            taxByRate: ["standard": Decimal(string: "285.18")!], totalsByCurrency: [.eur: Decimal(string: "3988.86")!],
            note: note, paid: false, updatedAt: nil)
    }

    @Test func setDataFromWritesFieldsAndTheServerTimestampReadsAsPending() async throws {
        let dir = TemporaryDirectory("codable")
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let ref = try store.document("invoices/i1")
        var invoice = try Self.invoice("INV-1")
        invoice.id = "not-the-id"   // ignored: the write goes to `ref`
        let before = Date()
        try await ref.setData(from: invoice)

        let snapshot = try await ref.getDocument(source: .cache)
        #expect(snapshot.get("id") == nil, "@DocumentID is never written")
        #expect(snapshot.get("number") == "INV-1")
        #expect(snapshot.get("issuedAt") == .timestamp(try Timestamp(seconds: 1_714_564_800, nanos: 500_000_000)))
        #expect(snapshot.get("totalsByCurrency.EUR") == "3988.86", "Decimal is stored as its exact text")
        #expect(snapshot.get("updatedAt") == .null, "a pending server timestamp reads as null by default")
        #expect(snapshot.get("updatedAt", serverTimestamps: .estimate)?.timestampValue != nil)

        let read = try snapshot.data(as: Invoice.self)
        #expect(read.id == "i1", "@DocumentID comes from the path")
        #expect(read.updatedAt == nil, "ServerTimestampBehavior.none: nil until the server sets it")
        let estimated = try snapshot.data(as: Invoice.self, serverTimestamps: .estimate)
        let estimate = try #require(estimated.updatedAt)
        #expect(estimate.timeIntervalSince(before) > -1 && estimate.timeIntervalSinceNow < 1, "the local write time")
        var expected = invoice
        expected.id = "i1"
        #expect(read == expected)

        // A second write with a set timestamp, then a merge whose nil @ServerTimestamp is
        // pending: `.previous` reads the value before it. (A full set replaces the document,
        // so after one there is no previous value.)
        invoice.updatedAt = Date(timeIntervalSince1970: 1_700_000_000)
        try await ref.setData(from: invoice)
        #expect(try await ref.getDocument(as: Invoice.self, source: .cache).updatedAt == invoice.updatedAt)
        try await ref.setData(from: try Self.invoice("INV-1"), merge: true)
        let previous = try await ref.getDocument(as: Invoice.self, source: .cache, serverTimestamps: .previous)
        #expect(previous.updatedAt == invoice.updatedAt)
        try await ref.setData(from: try Self.invoice("INV-1"))
        #expect(try await ref.getDocument(as: Invoice.self, source: .cache, serverTimestamps: .previous).updatedAt == nil)
        await store.close()
    }

    @Test func addDocumentBatchAndQueryDecode() async throws {
        let dir = TemporaryDirectory("codable")
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let invoices = try store.collection("invoices")
        let (added, _) = try await invoices.addDocument(from: try Self.invoice("INV-A"))
        var batch = store.batch()
        try batch.setData(from: try Self.invoice("INV-B"), for: try invoices.document("b"))
        try batch.setData(from: try Self.invoice("INV-C"), for: try invoices.document("c"))
        // A bad model is refused when added, naming the field; the batch keeps its writes.
        var bad = try Self.invoice("INV-D")
        bad.lines[0].unitPrice = .nan
        #expect { try batch.setData(from: bad, for: try invoices.document("d")) } throws: {
            isDocError($0, at: "invoices/d field lines[0].unitPrice", message: "NaN")
        }
        #expect(batch.count == 2)
        try await batch.commit()

        let snapshot = try await invoices.order(by: "number").getDocuments(source: .cache)
        let read = try snapshot.documents(as: Invoice.self)
        #expect(read.map(\.number) == ["INV-A", "INV-B", "INV-C"])
        #expect(read.map(\.id) == [added.documentID, "b", "c"])
        // Query by a model value encoded the same way.
        let eur = try DocumentEncoder().encodeValue(Currency.eur)
        #expect(try await invoices.whereField("currency", isEqualTo: eur).getDocuments(source: .cache).count == 3)
        await store.close()
    }

    @Test func mergeLeavesOmittedNilsAndOverwritesExplicitNulls() async throws {
        let dir = TemporaryDirectory("codable")
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let ref = try store.document("invoices/i1")
        try await ref.setData(from: try Self.invoice("INV-1", note: "call first"))
        try await ref.setData(["extra": "kept by merge"], merge: true)

        try await ref.setData(from: try Self.invoice("INV-2", note: nil), merge: true)
        var snapshot = try await ref.getDocument(source: .cache)
        #expect(snapshot.get("number") == "INV-2")
        #expect(snapshot.get("note") == "call first", "an omitted nil leaves the stored field")
        #expect(snapshot.get("extra") == "kept by merge")

        var nulls = DocumentEncoder()
        nulls.nilEncodingStrategy = .null
        try await ref.setData(from: try Self.invoice("INV-3", note: nil), merge: true, encoder: nulls)
        snapshot = try await ref.getDocument(source: .cache)
        #expect(snapshot.get("note") == .null, "an explicit null overwrites")
        #expect(try snapshot.data(as: Invoice.self).note == nil)

        // Nested maps (structs, dictionaries) merge key by key: a key the model no longer has
        // stays; without merge the document is exactly the model.
        var twoTotals = try Self.invoice("INV-4")
        twoTotals.totalsByCurrency = [.eur: 1, .usd: 2]
        try await ref.setData(from: twoTotals)
        twoTotals.totalsByCurrency = [.eur: 3]
        try await ref.setData(from: twoTotals, merge: true)
        snapshot = try await ref.getDocument(source: .cache)
        #expect(snapshot.get("totalsByCurrency") == ["EUR": "3", "USD": "2"])
        #expect(snapshot.get("extra") == nil, "without merge the document is exactly the model")
        try await ref.setData(from: twoTotals)
        snapshot = try await ref.getDocument(source: .cache)
        #expect(snapshot.get("totalsByCurrency") == ["EUR": "3"])
        await store.close()
    }

    @Test func readsOfMissingDocumentsAndLimitsAreErrors() async throws {
        let dir = TemporaryDirectory("codable")
        let store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let ref = try store.document("invoices/none")
        await #expect { try await ref.getDocument(as: Invoice.self, source: .cache) } throws: {
            isDocError($0, .notFound, at: "invoices/none")
        }
        // The write path's limits still apply: a note over 1 MiB is refused, nothing stored.
        let huge = try Self.invoice("INV-H", note: String(repeating: "x", count: DocumentLimits.maxDocumentBytes))
        await #expect { try await ref.setData(from: huge) } throws: { ($0 as? DocError)?.code == .invalidArgument }
        #expect(await store.pendingWriteCount == 0)
        // Not a map at all.
        await #expect { try await ref.setData(from: [1, 2, 3]) } throws: {
            isDocError($0, at: "invoices/none", message: "a document is a map")
        }
        await store.close()
    }
}
