import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("Remote document cache", .cpuBound)
struct RemoteDocumentCacheTests {
    typealias F = PersistenceFixtures

    static let everyKind: [MaybeDocument] = [
        .document(Document(
            key: F.key("rooms/a"),
            data: ObjectValue([
                "s": "text", "i": .integer(-5), "d": .double(-0.0), "nan": .double(.nan), "b": true, "n": .null,
                "t": .timestamp(F.time(1_700_000_000, 123_456_789)), "bytes": .bytes([0, 0xFF]),
                "ref": .reference(F.key("users/u")), "geo": .geoPoint(try! GeoPoint(latitude: 1.5, longitude: -2)),
                "arr": [1, "x", ["k": 2]], "map": ["nested": ["deep": 3]], "empty": .map([:]),
            ]),
            version: F.version(42), createTime: F.version(7), hasLocalMutations: true, hasCommittedMutations: true)),
        .document(Document(key: F.key("rooms/a/msgs/m1"), data: ObjectValue(), version: F.version(1))),
        .noDocument(NoDocument(key: F.key("rooms/gone"), version: F.version(9))),
        .noDocument(NoDocument(key: F.key("rooms/pending-delete"), version: .none, hasLocalMutations: true)),
        .noDocument(NoDocument(key: F.key("rooms/acked-delete"), version: F.version(3), hasCommittedMutations: true)),
        .unknown(UnknownDocument(key: F.key("rooms/unknown"), version: F.version(11))),
    ]

    @Test func everyKindRoundTripsAcrossReopen() throws {
        try F.withDirectory { dir in
            do {
                let p = try Persistence.open(directory: dir)
                try F.addDocuments(Self.everyKind, readTime: 5, to: p)
                p.close()
            }
            let p = try Persistence.open(directory: dir)
            defer { p.close() }
            try p.run("read") { txn throws(DocError) in
                for expected in Self.everyKind {
                    let got = try p.remoteDocuments.get(expected.key, in: txn)
                    #expect(got == expected)
                    #expect(try p.remoteDocuments.entry(for: expected.key, in: txn)?.readTime == F.version(5))
                }
                let all = try p.remoteDocuments.getAll(Self.everyKind.map(\.key) + [F.key("rooms/none")], in: txn)
                #expect(all.count == Self.everyKind.count)
                #expect(all[F.key("rooms/none")] == nil)
                #expect(all[F.key("rooms/unknown")] == Self.everyKind[5])
                #expect(try p.remoteDocuments.get(F.key("rooms/none"), in: txn) == nil)
            }
        }
    }

    @Test func addReplacesAndRemoveDeletes() throws {
        try F.withStore { p, _ in
            try F.addDocuments([F.document("rooms/a", ["v": 1], version: 1)], to: p)
            try F.addDocuments([F.document("rooms/a", ["v": 2], version: 2)], readTime: 2, to: p)
            try p.run("check") { txn throws(DocError) in
                #expect(try p.remoteDocuments.get(F.key("rooms/a"), in: txn) == F.document("rooms/a", ["v": 2], version: 2))
                try p.remoteDocuments.remove(F.key("rooms/a"), in: txn)
                try p.remoteDocuments.remove(F.key("rooms/never"), in: txn)  // no-op
                #expect(try p.remoteDocuments.get(F.key("rooms/a"), in: txn) == nil)
            }
            // Every row of the document is gone: data, read time, group, indexes, sentinel.
            for table in [KeySchema.Table.remoteDocuments, .readTimeIndex, .collectionGroupIndex, .fieldIndex, .arrayIndex, .lruSentinels] {
                #expect(try F.keys(of: table, in: p).isEmpty, "\(table.name)")
            }
        }
    }

    @Test func collectionScansExcludeSubCollectionsAndOtherCollections() throws {
        try F.withStore { p, _ in
            let paths = [
                "rooms/a", "rooms/b", "rooms/a/msgs/1", "rooms/b/msgs/2/x/y", "rooms2/c", "room/d", "roomsa/e",
                "rooms/a\u{0}", "rooms/\u{FF}z", "users/rooms/rooms/f",
            ]
            try F.addDocuments(paths.map { F.document($0) }, to: p)
            try p.run("scan") { txn throws(DocError) in
                let rooms = try p.remoteDocuments.documents(inCollection: F.path("rooms"), in: txn)
                #expect(Set(rooms.keys) == Set(["rooms/a", "rooms/b", "rooms/a\u{0}", "rooms/\u{FF}z"].map(F.key)))
                let msgs = try p.remoteDocuments.documents(inCollection: F.path("rooms/a/msgs"), in: txn)
                #expect(Set(msgs.keys) == [F.key("rooms/a/msgs/1")])
                #expect(try p.remoteDocuments.documents(inCollection: F.path("nothing"), in: txn).isEmpty)
                #expect(try p.remoteDocuments.count(inCollection: F.path("rooms"), in: txn) == 4)
                // Lazy scans in key order, both directions, with a start key.
                let ordered = p.remoteDocuments.scanDocuments(inCollection: F.path("rooms"), in: txn).map(\.key)
                #expect(ordered == ["rooms/a", "rooms/a\u{0}", "rooms/b", "rooms/\u{FF}z"].map(F.key))
                let reversed = p.remoteDocuments.scanDocuments(inCollection: F.path("rooms"), reverse: true, in: txn).map(\.key)
                #expect(reversed == ordered.reversed())
                let afterA = p.remoteDocuments.scanDocuments(inCollection: F.path("rooms"), after: F.key("rooms/a"), in: txn).map(\.key)
                #expect(afterA == ["rooms/a\u{0}", "rooms/b", "rooms/\u{FF}z"].map(F.key))
                let beforeB = p.remoteDocuments.scanDocuments(
                    inCollection: F.path("rooms"), after: F.key("rooms/b"), reverse: true, in: txn).map(\.key)
                #expect(beforeB == ["rooms/a\u{0}", "rooms/a"].map(F.key))
            }
        }
    }

    @Test func collectionGroupsFindEveryDepth() throws {
        try F.withStore { p, _ in
            let paths = ["rooms/a/msgs/1", "rooms/b/msgs/2", "users/u/msgs/3", "msgs/4", "msgsX/5", "rooms/msgs", "a/b/c/d/msgs/6", "a/b/c/d/msgs/6/sub/7"]
            try F.addDocuments(paths.map { F.document($0) }, to: p)
            try p.run("group") { txn throws(DocError) in
                let msgs = try p.remoteDocuments.documents(inCollectionGroup: "msgs", in: txn)
                #expect(Set(msgs.keys) == Set(["rooms/a/msgs/1", "rooms/b/msgs/2", "users/u/msgs/3", "msgs/4", "a/b/c/d/msgs/6"].map(F.key)))
                #expect(Set(try p.remoteDocuments.documents(inCollectionGroup: "sub", in: txn).keys) == [F.key("a/b/c/d/msgs/6/sub/7")])
                #expect(try p.remoteDocuments.documents(inCollectionGroup: "msg", in: txn).isEmpty)
            }
        }
    }

    @Test func readTimeIndexFindsDocumentsChangedSince() throws {
        try F.withStore { p, _ in
            try F.addDocuments([F.document("rooms/a")], readTime: 10, to: p)
            try F.addDocuments([F.document("rooms/b")], readTime: 20, to: p)
            try F.addDocuments([F.document("rooms/c"), F.document("other/x"), F.document("rooms/c/sub/y")], readTime: 30, to: p)
            try p.run("query") { txn throws(DocError) in
                let rooms = F.path("rooms")
                #expect(Set(try p.remoteDocuments.documents(inCollection: rooms, changedSince: F.version(15), in: txn).keys)
                    == Set(["rooms/b", "rooms/c"].map(F.key)))
                #expect(Set(try p.remoteDocuments.documents(inCollection: rooms, changedSince: F.version(20), in: txn).keys)
                    == [F.key("rooms/c")])
                #expect(try p.remoteDocuments.documents(inCollection: rooms, changedSince: F.version(30), in: txn).isEmpty)
                #expect(try p.remoteDocuments.documents(inCollection: rooms, changedSince: .none, in: txn).count == 3)
            }
            // Re-reading a document moves its read-time row.
            try F.addDocuments([F.document("rooms/a", ["v": 2])], readTime: 40, to: p)
            try p.run("query") { txn throws(DocError) in
                #expect(Set(try p.remoteDocuments.documents(inCollection: F.path("rooms"), changedSince: F.version(35), in: txn).keys)
                    == [F.key("rooms/a")])
            }
            #expect(try F.keys(of: .readTimeIndex, in: p).count == 5)
        }
    }
}
