import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("LRU garbage collection", .cpuBound)
struct LRUGarbageCollectorTests {
    typealias F = PersistenceFixtures

    static func exists(_ p: Persistence, _ path: String) throws -> Bool {
        try p.run("exists") { txn throws(DocError) in try p.remoteDocuments.get(F.key(path), in: txn) != nil }
    }

    static func addTarget(_ p: Persistence, id: TargetID, collection: String, keys: [String]) throws {
        try p.run("target \(id)") { txn throws(DocError) in
            let target = try! Query(collection: collection).toTarget()
            try p.targets.add(TargetData(target: target, targetID: id, purpose: .listen, sequenceNumber: txn.sequenceNumber), in: txn)
            for k in keys { try p.remoteDocuments.add(F.document(k), readTime: F.version(1), in: txn) }
            try p.targets.addMatchingKeys(keys.map(F.key), to: id, in: txn)
        }
    }

    /// Every kind of document that must survive, plus garbage, all older than the garbage
    /// collector's cut-off (percentile 100 collects every sequence number).
    @Test func pendingWritesAndActiveTargetsAreNeverCollected() throws {
        try F.withStore { p, _ in
            try Self.addTarget(p, id: 2, collection: "active", keys: ["active/a", "active/b"])
            try Self.addTarget(p, id: 4, collection: "inactive", keys: ["inactive/c", "inactive/d"])
            // Orphans: cached documents in no target.
            try F.addDocuments([F.document("orphan/e"), F.document("orphan/f")], to: p)
            // Orphaned but with a pending write of another user, an overlay, or pinned by the caller.
            try F.addDocuments([F.document("pending/g"), F.document("overlay/h"), F.document("pinned/i"), F.document("pending/j")], to: p)
            try p.run("local writes") { txn throws(DocError) in
                _ = try p.mutationQueue(for: "bob").addBatch(
                    localWriteTime: F.time(1), baseMutations: [], mutations: [.delete(F.key("pending/g"))], in: txn)
                _ = try p.mutationQueue(for: "alice").addBatch(
                    localWriteTime: F.time(1), baseMutations: [.set(F.key("pending/j"), ObjectValue())], mutations: [], in: txn)
                try p.overlays.save(
                    Overlay(key: F.key("overlay/h"), largestBatchID: 1, document: F.document("overlay/h")), user: "carol", in: txn)
                // An active-target document with a newer pending write too.
                _ = try p.mutationQueue(for: "alice").addBatch(
                    localWriteTime: F.time(1), baseMutations: [], mutations: [.delete(F.key("active/a"))], in: txn)
            }
            // Everything is old: use many new sequence numbers.
            for _ in 0..<5 { try p.run("tick") { txn throws(DocError) in _ = txn.sequenceNumber } }

            p.lru.percentileToCollect = 100
            let result = try p.run("gc") { txn throws(DocError) in
                try p.lru.runGarbageCollection(activeTargetIDs: [2], pinnedKeys: [F.key("pinned/i")], in: txn)
            }
            #expect(result.didRun)
            #expect(result.targetsRemoved == 1)
            #expect(result.documentsRemoved == 4)  // inactive/c, inactive/d, orphan/e, orphan/f
            for survivor in ["active/a", "active/b", "pending/g", "pending/j", "overlay/h", "pinned/i"] {
                #expect(try Self.exists(p, survivor), "\(survivor) must not be collected")
            }
            for garbage in ["inactive/c", "inactive/d", "orphan/e", "orphan/f"] {
                #expect(try !Self.exists(p, garbage), "\(garbage) must be collected")
            }
            try p.run("targets") { txn throws(DocError) in
                #expect(try p.targets.targetData(forID: 2, in: txn) != nil)
                #expect(try p.targets.targetData(forID: 4, in: txn) == nil)
                #expect(try p.targets.matchingKeys(for: 2, in: txn) == [F.key("active/a"), F.key("active/b")])
                #expect(try p.targets.metadata(in: txn).targetCount == 1)
                #expect(try p.lru.sequenceNumber(for: F.key("orphan/e"), in: txn) == nil)
            }
            #expect(try F.keys(of: .documentTargets, in: p).count == 2)

            // Once the pending writes are gone the documents are ordinary orphans.
            try p.run("acknowledge") { txn throws(DocError) in
                for user in ["alice", "bob"] {
                    let q = p.mutationQueue(for: user)
                    for b in try q.allBatches(in: txn) { try q.remove(b, in: txn) }
                }
                try p.overlays.remove(F.key("overlay/h"), user: "carol", in: txn)
            }
            let second = try p.run("gc") { txn throws(DocError) in
                try p.lru.runGarbageCollection(activeTargetIDs: [2], in: txn)
            }
            #expect(second.documentsRemoved == 4)  // pending/g, pending/j, overlay/h, pinned/i
            #expect(try Self.exists(p, "active/a") && Self.exists(p, "active/b"))
            #expect(try !Self.exists(p, "pending/g") && !Self.exists(p, "overlay/h") && !Self.exists(p, "pinned/i"))
        }
    }

    /// Target membership is matched by exact document path: neighbours and sub-collection
    /// documents of a targeted document do not protect it, and vice versa.
    @Test func membershipIsPerDocumentNotPerPathPrefix() throws {
        try F.withStore { p, _ in
            try F.addDocuments(["t/a", "t/a\u{0}", "t/b/s/x", "u/a"].map { F.document($0) }, to: p)
            try Self.addTarget(p, id: 2, collection: "t", keys: ["t/a/s/b", "t/ab", "t/b"])
            // A document that matched for a while but was never cached leaves only a sentinel.
            try p.run("ghost") { txn throws(DocError) in
                try p.targets.addMatchingKeys([F.key("t/ghost")], to: 2, in: txn)
                try p.targets.removeMatchingKeys([F.key("t/ghost")], from: 2, in: txn)
                #expect(try p.lru.sequenceNumber(for: F.key("t/ghost"), in: txn) == txn.sequenceNumber)
            }
            p.lru.percentileToCollect = 100
            let result = try p.run("gc") { txn throws(DocError) in try p.lru.runGarbageCollection(activeTargetIDs: [2], in: txn) }
            #expect(result.documentsRemoved == 4)  // the ghost's sentinel goes, uncounted
            try p.run("ghost gone") { txn throws(DocError) in
                #expect(try p.lru.sequenceNumber(for: F.key("t/ghost"), in: txn) == nil)
            }
            for garbage in ["t/a", "t/a\u{0}", "t/b/s/x", "u/a"] {
                #expect(try !Self.exists(p, garbage), "\(garbage)")
            }
            for kept in ["t/a/s/b", "t/ab", "t/b"] {
                #expect(try Self.exists(p, kept), "\(kept)")
            }
        }
    }

    @Test func orphansAreCollectedInLeastRecentlyUsedOrder() throws {
        try F.withStore { p, _ in
            // One document per transaction: increasing sequence numbers.
            for i in 0..<20 { try F.addDocuments([F.document("docs/d\(String(i + 10))")], to: p) }
            // Reading d10 into a view makes it the most recently used.
            try p.run("view") { txn throws(DocError) in try p.lru.recordUse([F.key("docs/d10")], in: txn) }
            p.lru.percentileToCollect = 25  // 20 orphans → the 5 oldest
            let result = try p.run("gc") { txn throws(DocError) in try p.lru.runGarbageCollection(activeTargetIDs: [], in: txn) }
            #expect(result.sequenceNumbersCollected == 5)
            #expect(result.documentsRemoved == 5)
            let remaining = try p.run("list") { txn throws(DocError) in
                try p.remoteDocuments.documents(inCollection: F.path("docs"), in: txn).keys.map(\.documentID).sorted()
            }
            #expect(remaining == ["d10"] + (16..<30).map { "d\($0)" })
            // The cap on sequence numbers per run.
            p.lru.percentileToCollect = 100
            p.lru.maximumSequenceNumbersToCollect = 3
            let capped = try p.run("gc") { txn throws(DocError) in try p.lru.runGarbageCollection(activeTargetIDs: [], in: txn) }
            #expect(capped.documentsRemoved == 3)
            let after = try p.run("list") { txn throws(DocError) in
                try p.remoteDocuments.documents(inCollection: F.path("docs"), in: txn).keys.map(\.documentID).sorted()
            }
            #expect(after == ["d10"] + (19..<30).map { "d\($0)" })
        }
    }

    @Test func targetsAreCollectedByTheirSequenceNumbers() throws {
        try F.withStore { p, _ in
            for (i, id) in [2, 4, 6, 8].enumerated() {
                try Self.addTarget(p, id: TargetID(id), collection: "c\(i)", keys: ["c\(i)/x"])
            }
            // Target 2 is used again: it becomes the newest.
            try p.run("use 2") { txn throws(DocError) in
                let data = try p.targets.targetData(forID: 2, in: txn)!
                try p.targets.update(data.withSequenceNumber(txn.sequenceNumber), in: txn)
            }
            p.lru.percentileToCollect = 50  // 4 targets, 0 orphans → the 2 oldest: 4 and 6
            let result = try p.run("gc") { txn throws(DocError) in try p.lru.runGarbageCollection(activeTargetIDs: [4], in: txn) }
            #expect(result.targetsRemoved == 1)  // 4 is active
            try p.run("check") { txn throws(DocError) in
                #expect(try p.targets.allTargets(in: txn).map(\.targetID) == [2, 4, 8])
            }
            #expect(try !Self.exists(p, "c2/x"))
            #expect(try Self.exists(p, "c1/x") && Self.exists(p, "c0/x") && Self.exists(p, "c3/x"))
        }
    }

    @Test func collectChecksTheLimitAndTheSize() throws {
        try F.withStore { p, _ in
            let invalid = #expect(throws: DocError.self) {
                try p.collectGarbage(cacheSizeLimit: 1_000, activeTargetIDs: [])
            }
            #expect(invalid?.code == .invalidArgument)
            #expect(invalid?.message.contains("1 MiB") == true)
            try LRUGarbageCollector.validate(cacheSizeLimit: Persistence.unlimited)
            try LRUGarbageCollector.validate(cacheSizeLimit: StoreSettings.defaultCacheSizeBytes)
            #expect(StoreSettings.defaultCacheSizeBytes == 100 * 1024 * 1024)

            var rng = PersistenceRNG(seed: 5)
            let documents = (0..<600).map { i in
                F.document("blobs/b\(1000 + i)", ["data": .bytes((0..<4096).map { _ in UInt8(truncatingIfNeeded: rng.next()) })])
            }
            for chunk in stride(from: 0, to: documents.count, by: 50) {
                try F.addDocuments(Array(documents[chunk..<(chunk + 50)]), to: p)
            }
            try p.compact()
            #expect(try p.approximateSizeInBytes() > 2 * 1024 * 1024)

            #expect(try p.collectGarbage(cacheSizeLimit: Persistence.unlimited, activeTargetIDs: []) == .didNotRun)
            #expect(try p.collectGarbage(cacheSizeLimit: 1024 * 1024 * 1024, activeTargetIDs: []) == .didNotRun)
            let ran = try p.collectGarbage(cacheSizeLimit: LRUGarbageCollector.minimumCacheSizeBytes, activeTargetIDs: [])
            #expect(ran.didRun)
            // 10 % of 600 orphans is 60 sequence numbers; every document at or below the 60th
            // smallest goes: the two oldest chunks of 50 (one sequence number per chunk).
            #expect(ran.sequenceNumbersCollected == 60)
            #expect(ran.documentsRemoved == 100)
            #expect(try !Self.exists(p, "blobs/b1000") && !Self.exists(p, "blobs/b1099"))
            #expect(try Self.exists(p, "blobs/b1100") && Self.exists(p, "blobs/b1599"))
        }
    }
}
