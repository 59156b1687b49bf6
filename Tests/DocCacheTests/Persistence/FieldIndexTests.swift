import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("Local query indexes", .cpuBound)
struct FieldIndexTests {
    typealias F = PersistenceFixtures

    static let rooms = F.path("rooms")

    static func scan(
        _ p: Persistence, _ field: String, lower: IndexBound? = nil, upper: IndexBound? = nil, descending: Bool = false,
        collection: ResourcePath = rooms
    ) throws -> [String] {
        try p.run("scan") { txn throws(DocError) in
            p.remoteDocuments.scanIndex(
                collection: collection, field: F.field(field), lower: lower, upper: upper, descending: descending, in: txn
            ).map(\.key.documentID)
        }
    }

    static func incl(_ v: Value) -> IndexBound { IndexBound(value: v, inclusive: true) }
    static func excl(_ v: Value) -> IndexBound { IndexBound(value: v, inclusive: false) }

    @Test func scansInValueOrderBothDirectionsWithBounds() throws {
        try F.withStore { p, _ in
            let values: [(String, Value)] = [
                ("d1", 3), ("d2", 1), ("d3", 2.5), ("d4", "a"), ("d5", .null), ("d6", true), ("d7", [1]),
                ("d8", ["x": 1]), ("d9", .timestamp(F.time(5))), ("d10", 1.0), ("d0", .double(-.infinity)), ("dn", .double(.nan)),
            ]
            try F.addDocuments(values.map { F.document("rooms/\($0.0)", ["n": $0.1]) } + [F.document("rooms/none", ["m": 1])], to: p)
            let ascending = ["d5", "d6", "dn", "d0", "d10", "d2", "d3", "d1", "d9", "d4", "d7", "d8"]
            #expect(try Self.scan(p, "n") == ascending)
            #expect(try Self.scan(p, "n", descending: true) == ascending.reversed())
            // 1 and 1.0 are equal: both ends of an inclusive bound include both, by key order.
            #expect(try Self.scan(p, "n", lower: Self.incl(1), upper: Self.excl(3)) == ["d10", "d2", "d3"])
            #expect(try Self.scan(p, "n", lower: Self.excl(1), upper: Self.incl(3)) == ["d3", "d1"])
            #expect(try Self.scan(p, "n", lower: Self.excl(1), upper: Self.incl(3), descending: true) == ["d1", "d3"])
            #expect(try Self.scan(p, "n", lower: Self.incl(1.0), upper: Self.incl(1)) == ["d10", "d2"])
            #expect(try Self.scan(p, "n", lower: Self.excl(1), upper: Self.excl(1)).isEmpty)
            #expect(try Self.scan(p, "n", lower: Self.incl(3), upper: Self.incl(1)).isEmpty)
            #expect(try Self.scan(p, "n", upper: Self.excl(.double(-.infinity))) == ["d5", "d6", "dn"])
            #expect(try Self.scan(p, "n", lower: Self.incl("a")) == ["d4", "d7", "d8"])
            #expect(try Self.scan(p, "n", lower: Self.incl("a"), descending: true) == ["d8", "d7", "d4"])
            // Other fields and collections are separate.
            #expect(try Self.scan(p, "m") == ["none"])
            #expect(try Self.scan(p, "n", collection: F.path("other")).isEmpty)
        }
    }

    /// Random documents and bounds: every scan equals the model (filter by `Value.compare`,
    /// sort by value then key).
    @Test(arguments: [11, 12, 13] as [UInt64])
    func scansMatchTheModel(seed: UInt64) throws {
        var rng = PersistenceRNG(seed: seed)
        try F.withStore { p, _ in
            var model: [String: Value] = [:]
            for round in 0..<6 {
                var batch: [MaybeDocument] = []
                for _ in 0..<15 {
                    let id = "d\(rng.int(0..<30))"
                    if rng.chance(0.15) {
                        batch.append(.noDocument(NoDocument(key: F.key("rooms/" + id), version: F.version(2))))
                        model[id] = nil
                    } else if rng.chance(0.1) {
                        batch.append(F.document("rooms/" + id, ["other": 1]))
                        model[id] = nil
                    } else {
                        let v = rng.value()
                        batch.append(F.document("rooms/" + id, ["f": v]))
                        model[id] = v
                    }
                }
                // Later entries for the same id win, as in the model.
                try F.addDocuments(batch, readTime: Int64(round + 1), to: p)
                for _ in 0..<8 {
                    let lower: IndexBound? = rng.chance(0.3) ? nil : IndexBound(value: rng.value(), inclusive: rng.chance(0.5))
                    let upper: IndexBound? = rng.chance(0.3) ? nil : IndexBound(value: rng.value(), inclusive: rng.chance(0.5))
                    let descending = rng.chance(0.5)
                    var expected = model.filter { (_, v) in
                        if let lower {
                            let c = Value.compare(v, lower.value)
                            if c < 0 || (c == 0 && !lower.inclusive) { return false }
                        }
                        if let upper {
                            let c = Value.compare(v, upper.value)
                            if c > 0 || (c == 0 && !upper.inclusive) { return false }
                        }
                        return true
                    }.sorted { a, b in
                        let c = Value.compare(a.value, b.value)
                        return c != 0 ? c < 0 : compareUTF8(a.key, b.key) < 0
                    }.map(\.key)
                    if descending { expected.reverse() }
                    let got = try Self.scan(p, "f", lower: lower, upper: upper, descending: descending)
                    #expect(got == expected, "seed \(seed) round \(round) lower \(String(describing: lower)) upper \(String(describing: upper))")
                }
            }
        }
    }

    @Test func nestedFieldsAreIndexedButNotArrayMembers() throws {
        try F.withStore { p, _ in
            try F.addDocuments([
                F.document("rooms/a", ["address": ["city": "Oslo", "geo": ["lat": 1]]]),
                F.document("rooms/b", ["address": ["city": "Bergen"]]),
                F.document("rooms/c", ["address": "flat"]),
                F.document("rooms/d", ["list": [["city": "Nowhere"]]]),
            ], to: p)
            #expect(try Self.scan(p, "address.city") == ["b", "a"])
            #expect(try Self.scan(p, "address.geo.lat") == ["a"])
            // Maps are indexed as whole values too (maps sort after strings).
            #expect(try Self.scan(p, "address") == ["c", "b", "a"])
            #expect(try Self.scan(p, "list.city").isEmpty)
            #expect(try Self.scan(p, "list") == ["d"])
        }
    }

    @Test func updatesMoveEntriesAndDeletesRemoveThem() throws {
        try F.withStore { p, _ in
            try F.addDocuments([F.document("rooms/a", ["n": 1, "tags": ["x", "y"]]), F.document("rooms/b", ["n": 2])], to: p)
            let before = try F.keys(of: .fieldIndex, in: p).count
            #expect(before == 3)  // a.n, a.tags (the whole array), b.n
            try F.addDocuments([F.document("rooms/a", ["n": 5, "tags": ["y", "z"]])], readTime: 2, to: p)
            #expect(try Self.scan(p, "n", lower: Self.incl(1), upper: Self.incl(1)).isEmpty)
            #expect(try Self.scan(p, "n", lower: Self.incl(5), upper: Self.incl(5)) == ["a"])
            #expect(try Self.scan(p, "n") == ["b", "a"])
            #expect(try F.keys(of: .fieldIndex, in: p).count == 3)
            #expect(try F.keys(of: .arrayIndex, in: p).count == 2)
            try p.run("contains") { txn throws(DocError) in
                #expect(p.remoteDocuments.scanArrayIndex(collection: Self.rooms, field: F.field("tags"), contains: "x", in: txn).map(\.key.documentID).isEmpty)
                #expect(p.remoteDocuments.scanArrayIndex(collection: Self.rooms, field: F.field("tags"), contains: "z", in: txn).map(\.key.documentID) == ["a"])
            }
            // A deletion (no-document) and an unknown document have no entries.
            try F.addDocuments([.noDocument(NoDocument(key: F.key("rooms/a"), version: F.version(3)))], readTime: 3, to: p)
            try F.addDocuments([.unknown(UnknownDocument(key: F.key("rooms/b"), version: F.version(3)))], readTime: 3, to: p)
            #expect(try F.keys(of: .fieldIndex, in: p).isEmpty)
            #expect(try F.keys(of: .arrayIndex, in: p).isEmpty)
            #expect(try Self.scan(p, "n").isEmpty)
        }
    }

    @Test func arrayContainsIndex() throws {
        try F.withStore { p, _ in
            try F.addDocuments([
                F.document("rooms/a", ["tags": ["a", "b", "a"]]),
                F.document("rooms/b", ["tags": ["b"]]),
                F.document("rooms/c", ["tags": [1, ["k": "v"]]]),
                F.document("rooms/d", ["tags": "a"]),
                F.document("rooms/a/sub/e", ["tags": ["a"]]),
            ], to: p)
            try p.run("contains") { txn throws(DocError) in
                func contains(_ v: Value) -> [String] {
                    p.remoteDocuments.scanArrayIndex(collection: Self.rooms, field: F.field("tags"), contains: v, in: txn).map(\.key.documentID)
                }
                #expect(contains("a") == ["a"])
                #expect(contains("b") == ["a", "b"])
                #expect(contains(1.0) == ["c"])
                #expect(contains(["k": "v"]) == ["c"])
                #expect(contains("c").isEmpty)
                #expect(contains([1]).isEmpty)
            }
            // Equal elements share one entry.
            #expect(try F.keys(of: .arrayIndex, in: p).count == 6)
        }
    }

    @Test func valuesOverTheCapAreNotIndexedButRecorded() throws {
        try F.withStore { p, _ in
            let long = Value.string(String(repeating: "x", count: 2_000))
            try F.addDocuments([
                F.document("rooms/a", ["s": long, "tags": [long, "short"]]),
                F.document("rooms/b", ["s": "short"]),
            ], to: p)
            #expect(try Self.scan(p, "s") == ["b"])
            try p.run("unindexed") { txn throws(DocError) in
                #expect(try p.remoteDocuments.unindexedDocuments(collection: Self.rooms, field: F.field("s"), in: txn).map(\.documentID) == ["a"])
                #expect(try p.remoteDocuments.unindexedDocuments(collection: Self.rooms, field: F.field("tags"), arrayElements: true, in: txn).map(\.documentID) == ["a"])
                // The whole array is too long as a value, too.
                #expect(try p.remoteDocuments.unindexedDocuments(collection: Self.rooms, field: F.field("tags"), in: txn).map(\.documentID) == ["a"])
                #expect(try p.remoteDocuments.unindexedDocuments(collection: Self.rooms, field: F.field("other"), in: txn).isEmpty)
                #expect(p.remoteDocuments.scanArrayIndex(collection: Self.rooms, field: F.field("tags"), contains: "short", in: txn).map(\.key.documentID) == ["a"])
            }
            // Shrinking the value moves it into the index and drops the marker.
            try F.addDocuments([F.document("rooms/a", ["s": "also short"])], readTime: 2, to: p)
            #expect(try Self.scan(p, "s") == ["a", "b"])
            #expect(try F.keys(of: .unindexedValues, in: p).isEmpty)
        }
    }

    @Test func indexScansSeeTheTransactionsOwnWrites() throws {
        try F.withStore { p, _ in
            try F.addDocuments([F.document("rooms/a", ["n": 1]), F.document("rooms/b", ["n": 2])], to: p)
            try p.run("write and scan") { txn throws(DocError) in
                try p.remoteDocuments.add(F.document("rooms/c", ["n": 0]), readTime: F.version(2), in: txn)
                try p.remoteDocuments.add(F.document("rooms/b", ["n": 9]), readTime: F.version(2), in: txn)
                try p.remoteDocuments.remove(F.key("rooms/a"), in: txn)
                let keys = p.remoteDocuments.scanIndex(
                    collection: Self.rooms, field: F.field("n"), lower: nil, upper: nil, descending: false, in: txn)
                #expect(keys.map(\.key.documentID) == ["c", "b"])
                var iterator = keys.makeIterator()
                #expect(iterator.next()?.key.documentID == "c")
            }
        }
    }
}
