import DocModel
import DocTestSupport
import Testing
@testable import DocCache

/// Aggregations from a client: the server's values equal a client-side count/sum/average over
/// the same documents; offline the cache answers; pending writes count in the cache's values
/// and not in the server's.
@Suite("Aggregations from a client")
struct AggregationSyncTests {
    static func expected(_ amounts: [Int64]) -> (count: Int64, sum: Value, average: Value) {
        let sum = amounts.reduce(0, +)
        return (Int64(amounts.count), .integer(sum), amounts.isEmpty ? .null : .double(Double(sum) / Double(amounts.count)))
    }

    @Test func serverCacheAndPendingWrites() async throws {
        try await SyncHarness.run { harness in
            let writer = try await harness.openStore(device: "writer")
            var rng = SplitMix64(seed: 21)
            var amounts: [Int64] = []
            for i in 0..<40 {
                let amount = Int64.random(in: 1...10_000, using: &rng)
                amounts.append(amount)
                _ = try await writer.document("invoices/i\(i)").setData(["amount": .value(.integer(amount)), "open": true])
            }
            // A document without a number is counted, not summed.
            _ = try await writer.document("invoices/odd").setData(["amount": "unknown", "open": true])
            try await writer.waitForPendingWrites()

            let reader = try await harness.openStore(device: "reader")
            let invoices = try reader.collection("invoices")
            let fields = [try AggregateField.count(), try AggregateField.sum("amount"), try AggregateField.average("amount")]
            let expected = Self.expected(amounts)

            // Online: the server answers, over every committed invoice (no limit needed).
            let server = try await invoices.aggregate(fields, source: .server)
            #expect(!server.metadata.isFromCache)
            #expect(server.readTime != nil)
            #expect(server.count == expected.count + 1)
            #expect(server["sum_amount"] == expected.sum)
            #expect(server["average_amount"] == expected.average)
            #expect(try await invoices.whereField("open", isEqualTo: true).count(source: .server) == expected.count + 1)

            // The same numbers computed by hand over the documents the server returns.
            let documents = try await invoices.limit(to: 100).getDocuments(source: .server).documents
            let handAmounts = documents.compactMap { if case .integer(let n)? = $0.get("amount") { n } else { nil } }
            #expect(Self.expected(handAmounts).sum == server["sum_amount"])

            // Online, .default asks the server too.
            #expect(try await invoices.aggregate(fields).metadata.isFromCache == false)

            // Offline: the cache answers (.default), .server refuses.
            try await reader.disableNetwork()
            let cached = try await invoices.aggregate(fields)
            #expect(cached.metadata.isFromCache)
            #expect(cached.values == server.values, "the cache holds what the listen brought")
            await #expect(throws: DocError.self) { try await invoices.aggregate(fields, source: .server) }

            // A pending write counts in the cache's values, not in the server's.
            _ = try await reader.document("invoices/new").setData(["amount": 5, "open": true])
            let withPending = try await invoices.aggregate(fields, source: .cache)
            #expect(withPending.count == expected.count + 2)
            #expect(withPending.metadata.hasPendingWrites)
            harness.transport.holdWrites()
            try await reader.enableNetwork()
            let beforeAck = try await invoices.aggregate(fields, source: .server)
            #expect(beforeAck.count == expected.count + 1, "the server has not got the pending write")
            harness.transport.releaseWrites()
            try await reader.waitForPendingWrites()
            #expect(try await invoices.count(source: .server) == expected.count + 2)
        }
    }
}
