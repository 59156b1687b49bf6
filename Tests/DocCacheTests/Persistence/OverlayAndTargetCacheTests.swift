import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("Document overlay cache", .cpuBound)
struct DocumentOverlayCacheTests {
    typealias F = PersistenceFixtures

    static func overlay(_ path: String, _ batch: BatchID, _ fields: [String: Value]? = ["v": 1]) -> Overlay {
        let key = F.key(path)
        let document: MaybeDocument = fields.map {
            .document(Document(key: key, data: ObjectValue($0), version: .none, hasLocalMutations: true))
        } ?? .noDocument(NoDocument(key: key, version: .none, hasLocalMutations: true))
        return Overlay(key: key, largestBatchID: batch, document: document)
    }

    @Test func saveGetAndScanPerCollectionAndUser() throws {
        try F.withStore { p, _ in
            let overlays = [
                Self.overlay("rooms/a", 1), Self.overlay("rooms/b", 2, nil), Self.overlay("rooms/a/msgs/1", 3),
                Self.overlay("roomsX/c", 4), Self.overlay("users/u/msgs/2", 5),
            ]
            try p.run("save") { txn throws(DocError) in
                for o in overlays { try p.overlays.save(o, user: "alice", in: txn) }
                try p.overlays.save(Self.overlay("rooms/z", 9), user: "bob", in: txn)
            }
            try p.run("read") { txn throws(DocError) in
                let cache = p.overlays
                #expect(try cache.overlay(for: F.key("rooms/a"), user: "alice", in: txn) == overlays[0])
                // A pending delete keeps its local-mutations flag.
                #expect(try cache.overlay(for: F.key("rooms/b"), user: "alice", in: txn) == overlays[1])
                #expect(try cache.overlay(for: F.key("rooms/a"), user: "bob", in: txn) == nil)
                #expect(try cache.overlay(for: F.key("rooms/z"), user: "bob", in: txn)?.largestBatchID == 9)
                let rooms = try cache.overlays(inCollection: F.path("rooms"), user: "alice", in: txn)
                #expect(rooms == [F.key("rooms/a"): overlays[0], F.key("rooms/b"): overlays[1]])
                #expect(Set(try cache.overlays(inCollection: F.path("rooms"), user: "bob", in: txn).keys) == [F.key("rooms/z")])
                let msgs = try cache.overlays(inCollectionGroup: "msgs", user: "alice", in: txn)
                #expect(Set(msgs.keys) == [F.key("rooms/a/msgs/1"), F.key("users/u/msgs/2")])
                let some = try cache.overlays(for: [F.key("rooms/a"), F.key("roomsX/c"), F.key("rooms/none")], user: "alice", in: txn)
                #expect(Set(some.keys) == [F.key("rooms/a"), F.key("roomsX/c")])
                #expect(try cache.count(user: "alice", in: txn) == 5)
                #expect(try cache.count(user: "bob", in: txn) == 1)
                #expect(try cache.count(user: "", in: txn) == 0)
            }
            try p.run("replace and remove") { txn throws(DocError) in
                try p.overlays.save(Self.overlay("rooms/a", 7, ["v": 2]), user: "alice", in: txn)
                try p.overlays.remove(F.key("rooms/b"), user: "alice", in: txn)
                try p.overlays.remove(F.key("rooms/none"), user: "alice", in: txn)
            }
            try p.run("read again") { txn throws(DocError) in
                let rooms = try p.overlays.overlays(inCollection: F.path("rooms"), user: "alice", in: txn)
                #expect(rooms == [F.key("rooms/a"): Self.overlay("rooms/a", 7, ["v": 2])])
                #expect(try p.overlays.allOverlays(user: "alice", in: txn).count == 4)
            }
        }
    }

    @Test func anOverlayForAnotherKeyIsRefused() throws {
        try F.withStore { p, _ in
            let wrong = Overlay(key: F.key("rooms/a"), largestBatchID: 1, document: F.document("rooms/b"))
            let error = #expect(throws: DocError.self) {
                try p.run("save") { txn throws(DocError) in try p.overlays.save(wrong, user: "alice", in: txn) }
            }
            #expect(error?.code == .invalidArgument)
        }
    }
}

@Suite("Target cache", .cpuBound)
struct TargetCacheTests {
    typealias F = PersistenceFixtures

    static func target(_ build: (Query) throws -> Query = { $0 }, collection: String = "rooms") throws -> Target {
        try build(try Query(collection: collection)).toTarget()
    }

    @Test func addUpdateRemoveAndLookUpByTarget() throws {
        try F.withStore { p, _ in
            let all = try Self.target()
            let filtered = try Self.target { try $0.filter(.where(F.field("x"), .equal, 1)) }
            let limited = try Self.target { try $0.limit(to: 5) }
            let t2 = TargetData(target: all, targetID: 2, purpose: .listen, sequenceNumber: 10)
            let t4 = TargetData(target: filtered, targetID: 4, purpose: .listen, sequenceNumber: 11, resumeToken: [1])
            try p.run("add") { txn throws(DocError) in
                try p.targets.add(t2, in: txn)
                try p.targets.add(t4, in: txn)
            }
            try p.run("look up") { txn throws(DocError) in
                #expect(try p.targets.targetData(for: all, in: txn) == t2)
                #expect(try p.targets.targetData(for: filtered, in: txn) == t4)
                #expect(try p.targets.targetData(for: filtered, in: txn)?.resumeToken == [1])
                #expect(try p.targets.targetData(for: limited, in: txn) == nil)
                #expect(try p.targets.targetData(forID: 4, in: txn) == t4)
                // The limited target's canonical id extends the unlimited one's: still told apart.
                #expect(limited.canonicalID.hasPrefix(all.canonicalID) && limited.canonicalID != all.canonicalID)
                let t6 = TargetData(target: limited, targetID: 6, purpose: .listen, sequenceNumber: 12)
                try p.targets.add(t6, in: txn)
                #expect(try p.targets.targetData(for: limited, in: txn) == t6)
                #expect(try p.targets.targetData(for: all, in: txn) == t2)
                try p.targets.remove(t6, in: txn)
                #expect(try p.targets.targetData(forID: 6, in: txn) == nil)
                #expect(try p.targets.allTargets(in: txn).map(\.targetID) == [2, 4])
                let updated = t4.withResumeToken([7, 7], snapshotVersion: F.version(99)).withSequenceNumber(20)
                try p.targets.update(updated, in: txn)
                #expect(try p.targets.targetData(forID: 4, in: txn)?.resumeToken == [7, 7])
                #expect(try p.targets.targetData(for: filtered, in: txn)?.snapshotVersion == F.version(99))
                #expect(try p.targets.metadata(in: txn).targetCount == 2)
                let missing = #expect(throws: DocError.self) {
                    try p.targets.update(TargetData(target: limited, targetID: 8, purpose: .listen, sequenceNumber: 1), in: txn)
                }
                #expect(missing?.code == .notFound)
            }
            try p.run("remove") { txn throws(DocError) in
                try p.targets.addMatchingKeys([F.key("rooms/a")], to: 4, in: txn)
                try p.targets.remove(t4, in: txn)
                try p.targets.remove(t4, in: txn)  // already gone: nothing happens
                #expect(try p.targets.targetData(for: filtered, in: txn) == nil)
                #expect(try p.targets.targetData(forID: 4, in: txn) == nil)
                #expect(try p.targets.matchingKeys(for: 4, in: txn).isEmpty)
                #expect(try !p.targets.containsKey(F.key("rooms/a"), in: txn))
                #expect(try p.targets.metadata(in: txn).targetCount == 1)
            }
            #expect(try F.keys(of: .targetCanonicalIDs, in: p).count == 1)
            #expect(try F.keys(of: .documentTargets, in: p).isEmpty)
        }
    }

    @Test func matchingKeys() throws {
        try F.withStore { p, _ in
            let data = TargetData(target: try Self.target(), targetID: 2, purpose: .listen, sequenceNumber: 1)
            let other = TargetData(target: try Self.target(collection: "users"), targetID: 3, purpose: .limboResolution, sequenceNumber: 1)
            let a = F.key("rooms/a"), b = F.key("rooms/b"), c = F.key("rooms/c")
            try p.run("keys") { txn throws(DocError) in
                try p.targets.add(data, in: txn)
                try p.targets.add(other, in: txn)
                try p.targets.addMatchingKeys([a, b, c], to: 2, in: txn)
                try p.targets.addMatchingKeys([c], to: 3, in: txn)
                #expect(try p.targets.matchingKeys(for: 2, in: txn) == [a, b, c])
                try p.targets.removeMatchingKeys([b], from: 2, in: txn)
                #expect(try p.targets.matchingKeys(for: 2, in: txn) == [a, c])
                #expect(try p.targets.containsKey(a, in: txn))
                #expect(try !p.targets.containsKey(b, in: txn))
            }
            try p.run("remove all") { txn throws(DocError) in
                try p.targets.removeAllMatchingKeys(for: 2, in: txn)
                #expect(try p.targets.matchingKeys(for: 2, in: txn).isEmpty)
                #expect(try !p.targets.containsKey(a, in: txn))
                #expect(try p.targets.containsKey(c, in: txn))  // still in target 3
                #expect(try p.targets.matchingKeys(for: 3, in: txn) == [c])
            }
        }
    }

    @Test func metadataPersistsAcrossReopen() throws {
        try F.withDirectory { dir in
            let expected: TargetMetadata
            do {
                let p = try Persistence.open(directory: dir)
                try p.run("fill") { txn throws(DocError) in
                    #expect(try p.targets.metadata(in: txn) == TargetMetadata())
                    try p.targets.add(TargetData(target: try! Self.target(), targetID: 2, purpose: .listen, sequenceNumber: 5), in: txn)
                    try p.targets.add(TargetData(target: try! Self.target(collection: "b"), targetID: 12, purpose: .listen, sequenceNumber: 30), in: txn)
                    try p.targets.add(TargetData(target: try! Self.target(collection: "c"), targetID: 7, purpose: .limboResolution, sequenceNumber: 8), in: txn)
                    try p.targets.setLastRemoteSnapshotVersion(F.version(1234), in: txn)
                }
                expected = try p.run("read") { txn throws(DocError) in try p.targets.metadata(in: txn) }
                #expect(expected == TargetMetadata(
                    highestTargetID: 12, highestListenSequenceNumber: 30, lastRemoteSnapshotVersion: F.version(1234), targetCount: 3))
                // A failed transaction changes nothing.
                #expect(throws: DocError.self) {
                    try p.run("fails") { txn throws(DocError) in
                        try p.targets.setLastRemoteSnapshotVersion(F.version(9999), in: txn)
                        throw DocError(.aborted, "no")
                    }
                }
                p.close()
            }
            let p = try Persistence.open(directory: dir)
            defer { p.close() }
            try p.run("read") { txn throws(DocError) in
                #expect(try p.targets.metadata(in: txn) == expected)
                #expect(try p.targets.count(in: txn) == 3)
                // The LRU clock continues above every stored sequence number.
                #expect(txn.sequenceNumber > 30)
            }
        }
    }
}
