import DocModel
import DocTestSupport
import Foundation
import Testing
@testable import DocCache

/// decode(encode(x)) == x over generated models covering every supported type, nested
/// arrays, maps and optionals, extreme integers, 38-digit decimals and sub-second dates; also
/// through the storage encoding (the bytes LevelDB keeps) and through a real store.
@Suite("Codable round trips")
struct CodableRoundTripTests {
    static let seed: UInt64 = 0xC0DA_B1E5

    @Test func everyTypeRoundTrips() throws {
        var generator = ModelGenerator(seed: Self.seed)
        let encoder = DocumentEncoder()
        let decoder = DocumentDecoder()
        for iteration in 0..<500 {
            let model = generator.everyType()
            let fields = try encoder.encode(model)
            let decoded = try decoder.decode(EveryType.self, from: fields.asReadFields)
            #expect(decoded == model, "seed \(Self.seed) iteration \(iteration)")
            if decoded != model { return }
        }
    }

    @Test func invoicesRoundTrip() throws {
        var generator = ModelGenerator(seed: Self.seed ^ 1)
        let key = try DocumentKey("invoices/i1")
        for iteration in 0..<500 {
            let invoice = generator.invoice()
            let fields = try DocumentEncoder().encode(invoice)
            var decoded = try DocumentDecoder().decode(Invoice.self, from: fields.asReadFields, documentKey: key)
            #expect(decoded.id == "i1", "the id comes from the document's path")
            decoded.id = nil
            #expect(decoded == invoice, "seed \(Self.seed ^ 1) iteration \(iteration)")
            if decoded != invoice { return }
        }
    }

    /// The same models through the binary form the store writes and reads back: what
    /// LevelDB holds decodes to the model.
    @Test func everyTypeRoundTripsThroughTheStorageEncoding() throws {
        var generator = ModelGenerator(seed: Self.seed ^ 2)
        let key = try DocumentKey("models/m1")
        for iteration in 0..<200 {
            let model = generator.everyType()
            let mutation = try UserDataParser.set(key, try DocumentEncoder().encode(model))
            guard case .set(let object) = mutation.kind else {
                Issue.record("not a set: \(mutation.kind)")
                return
            }
            let stored = try ObjectValue(binary: object.binaryEncoded())
            let decoded = try DocumentDecoder().decode(EveryType.self, from: stored.fields)
            // A nil @ServerTimestamp is a transform, not stored data: it reads back as nil.
            #expect(decoded == model, "seed \(Self.seed ^ 2) iteration \(iteration)")
            if decoded != model { return }
        }
    }

    /// Generated invoices written with `setData(from:)` and `WriteBatch.setData(from:)`, read
    /// with `getDocument(as:)` and `documents(as:)`, before and after reopening the store.
    @Test func invoicesRoundTripThroughTheStore() async throws {
        let dir = TemporaryDirectory("codable")
        var store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        var generator = ModelGenerator(seed: Self.seed ^ 3)
        var written: [String: Invoice] = [:]
        var batch = store.batch()
        for i in 0..<60 {
            var invoice = generator.invoice()
            invoice.updatedAt = generator.date()   // a set value is stored as given
            let ref = try store.document("invoices/i\(i)")
            if i % 2 == 0 {
                try await ref.setData(from: invoice)
            } else {
                try batch.setData(from: invoice, for: ref)
            }
            invoice.id = "i\(i)"
            written["i\(i)"] = invoice
        }
        try await batch.commit()

        for (id, invoice) in written {
            let read = try await store.document("invoices/\(id)").getDocument(as: Invoice.self, source: .cache)
            #expect(read == invoice)
        }
        await store.close()

        store = try await DocumentStore.open(directory: dir.path, tenant: "t", user: "u")
        let snapshot = try await store.collection("invoices").getDocuments(source: .cache)
        let invoices = try snapshot.documents(as: Invoice.self)
        #expect(invoices.count == written.count)
        for invoice in invoices { #expect(invoice == written[invoice.id ?? ""], "after reopening: \(invoice.id ?? "?")") }
        await store.close()
    }
}
