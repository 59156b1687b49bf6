import DocModel
import DocProtocol
import Testing
@testable import DocServer

/// The bloom filters of existence filters: how the server builds them, and the resumes that
/// send them (docs/protocol.md, "Adding a target").
@Suite struct BloomFilterTests {
    static func names(_ paths: [String]) -> [DocumentKey] { paths.map(T.key) }

    /// Vectors computed independently with Python's `hashlib` (the same sizing: `m =
    /// ceil(-n ln p / ln2²)`, `k = round(m / n · ln 2)`, `n ≥ 1`; bits set at `((h1 + i·h2) mod
    /// 2⁶⁴) mod m` with `h1`, `h2` the little-endian halves of the MD5 of
    /// `projects/doccache/databases/(default)/documents/<path>`; the script is in
    /// DocCacheTests' `BloomVectors`).
    @Test func theBuilderMatchesIndependentlyComputedFilters() {
        let notes = BloomFilterBuilder.filter(of: Self.names((0..<7).map { "notes/n\($0)" }), falsePositiveRate: 0.01)
        #expect(notes == .init(bitmap: [67, 156, 60, 251, 99, 21, 136, 217, 13], padding: 4, hashCount: 7))
        let rooms = BloomFilterBuilder.filter(of: Self.names((0..<5).map { "rooms/r\($0)" }), falsePositiveRate: 0.01)
        #expect(rooms == .init(bitmap: [30, 68, 224, 244, 253, 39], padding: 0, hashCount: 7))
        // The example of docs/protocol.md.
        let example = BloomFilterBuilder.filter(of: Self.names(["rooms/r1/messages/m2", "rooms/r1/messages/m9"]), falsePositiveRate: 0.01)
        #expect(example == .init(bitmap: try! Base64.decode("x2EI").get(), padding: 4, hashCount: 7))
        // An empty target still gets bits, none set: every document is ruled out.
        let empty = BloomFilterBuilder.filter(of: [DocumentKey](), falsePositiveRate: 0.01)
        #expect(empty == .init(bitmap: [0, 0], padding: 6, hashCount: 7))
        #expect(!empty.mightContain(T.key("notes/n0")))
    }

    @Test(arguments: [1, 10, 100, 1_000])
    func sizedForAboutOnePercentFalsePositives(count: Int) {
        let keys = Self.names((0..<count).map { "items/i\($0)" })
        let filter = BloomFilterBuilder.filter(of: keys, falsePositiveRate: 0.01)
        let bits = filter.bitmap.count * 8 - filter.padding
        #expect((0...7).contains(filter.padding))
        #expect(filter.hashCount == 7)
        #expect(Double(bits) >= 9.58 * Double(count) && Double(bits) < 9.59 * Double(count) + 1)
        // No false negatives.
        #expect(keys.allSatisfy { filter.mightContain($0) })
        // About 1 % false positives among documents not in it (a loose bound: small filters vary).
        let others = (0..<20_000).filter { filter.mightContain(T.key("others/o\($0)")) }.count
        #expect(Double(others) / 20_000 < (count < 100 ? 0.05 : 0.02), "\(others) false positives")
    }

    @Test func aResumedTargetsExistenceFilterHoldsEveryCurrentKey() async throws {
        let server = TestServer()
        let w = try await server.connect(client: "w")
        for i in 0..<30 { await server.write(w, batch: i + 1, [T.set("items/i\(i)", ["rank": .integer(Int64(i))])]) }
        let c = try await server.connect()
        let target = T.collection("items", limit: 100)
        var mirror = ClientMirror()
        mirror.apply(await server.core.watch(.init(targetID: 2, target: target), on: c))
        let token = try #require(mirror.tokens[2] ?? nil)
        await server.write(w, batch: 100, [.delete(T.key("items/i3"))])
        await server.write(w, batch: 101, [T.set("items/new", ["rank": 99])])

        let again = try await server.connect(client: "again")
        let messages = await server.core.watch(.init(targetID: 2, target: target, resumeToken: token, expectedCount: 30), on: again)
        let filter = try #require(messages.lazy.compactMap { if case .existenceFilter(let f) = $0 { f } else { nil } }.first)
        let results = try await server.tenantStore("acme").query(target, limit: 100).documents.map(\.key)
        #expect(filter.count == results.count)
        let bloom = try #require(filter.bloomFilter)
        #expect(results.allSatisfy { bloom.mightContain($0) }, "every current document is in the filter")
        #expect(bloom.hashCount == 7)
        #expect(bloom.bitmap.count == (Int((9.585 * 30).rounded(.up)) + 7) / 8)

        // A document target's count says it all: no bloom filter.
        let doc = T.target(DocModel.Query(document: T.key("items/i1")))
        let docMessages = await server.core.watch(.init(targetID: 4, target: doc, resumeToken: token, expectedCount: 1), on: again)
        let docFilter = try #require(docMessages.lazy.compactMap { if case .existenceFilter(let f) = $0 { f } else { nil } }.first)
        #expect(docFilter == .init(targetID: 4, count: 1))
    }

    /// A token older than the change log reaches: the target resumes from the documents, and
    /// the existence filter's bloom filter tells the client which of its documents are gone.
    @Test func aTokenPastTheChangeLogResumesFromTheDocuments() async throws {
        let server = TestServer(configuration: ServerConfiguration(changeLogRetentionMicros: 1_000_000))
        let w = try await server.connect(client: "w")
        for (i, path) in ["r/a", "r/b", "r/c", "r/d", "r/e"].enumerated() {
            await server.write(w, batch: i + 1, [T.set(path, ["rank": .integer(Int64(i))])])
        }
        let c = try await server.connect()
        let target = T.collection("r", limit: 10)
        var mirror = ClientMirror()
        mirror.apply(await server.core.watch(.init(targetID: 2, target: target), on: c))
        let token = try #require(mirror.tokens[2] ?? nil)
        await server.core.close(c)

        // While the client is away: a hard delete, a soft delete, an edit and a new document;
        // then the log is pruned past all of it.
        server.clock.advance(by: 1_000)
        await server.write(w, batch: 10, [.delete(T.key("r/a"))])
        await server.write(w, batch: 11, [.tombstone(T.key("r/b"))])
        await server.write(w, batch: 12, [.setMerge(T.key("r/c"), T.data(["edited": true]))])
        await server.write(w, batch: 13, [T.set("r/f", ["rank": 9])])
        server.clock.advance(by: 10_000_000)
        #expect(await server.core.runMaintenance().changesPruned == 9)

        let again = try await server.connect(client: "again")
        mirror.documentsReceived = 0
        let messages = await server.core.watch(.init(targetID: 2, target: target, resumeToken: token, expectedCount: 5), on: again)
        #expect(!messages.contains { $0.targetChange?.state == .reset })
        #expect(messages.compactMap { $0.documentChange?.document.key.description } == ["r/c", "r/f"], "only what changed")
        let filter = try #require(messages.lazy.compactMap { if case .existenceFilter(let f) = $0 { f } else { nil } }.first)
        #expect(filter.count == 4)
        mirror.apply(messages)
        // The mirror counted a, b, c, d, e, f; the filter ruled out a and b.
        #expect(mirror.keys(2) == ["r/c", "r/d", "r/e", "r/f"])
        #expect(mirror.needsRequery.isEmpty)
        #expect(messages.last?.targetChange?.snapshotVersion == (try await server.tenantStore("acme").state().lastVersion))
    }

    @Test func aFullOldWindowOrNoBloomFiltersStillReset() async throws {
        for bloom in [true, false] {
            var configuration = ServerConfiguration(changeLogRetentionMicros: 1_000_000)
            if !bloom { configuration.bloomFilterFalsePositiveRate = nil }
            let server = TestServer(configuration: configuration)
            let w = try await server.connect(client: "w")
            for i in 0..<4 { await server.write(w, batch: i + 1, [T.set("r/d\(i)", ["rank": .integer(Int64(i))])]) }
            let c = try await server.connect()
            var mirror = ClientMirror()
            mirror.apply(await server.core.watch(.init(targetID: 2, target: T.collection("r", limit: 3)), on: c))
            mirror.apply(await server.core.watch(.init(targetID: 4, target: T.collection("r", limit: 10)), on: c))
            let token = try #require(mirror.tokens[2] ?? nil)
            server.clock.advance(by: 10_000_000)
            await server.write(w, batch: 10, [.delete(T.key("r/d0"))])
            _ = await server.core.runMaintenance()

            let again = try await server.connect(client: "again")
            // The limited window was full: which unchanged documents the client has is unknown.
            let full = await server.core.watch(
                .init(targetID: 2, target: T.collection("r", limit: 3), resumeToken: token, expectedCount: 3), on: again)
            #expect(full.contains { $0.targetChange?.state == .reset })
            // Not full: resumed from the documents, unless bloom filters are off.
            let partial = await server.core.watch(
                .init(targetID: 4, target: T.collection("r", limit: 10), resumeToken: token, expectedCount: 4), on: again)
            #expect(partial.contains { $0.targetChange?.state == .reset } == !bloom)
        }
    }
}
