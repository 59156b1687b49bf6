import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("Mutation queue", .cpuBound)
struct MutationQueueTests {
    typealias F = PersistenceFixtures

    static func set(_ path: String, _ fields: [String: Value] = ["v": 1]) -> Mutation {
        .set(F.key(path), ObjectValue(fields))
    }

    @discardableResult
    static func add(_ p: Persistence, user: String = "alice", _ mutations: [Mutation], base: [Mutation] = []) throws -> MutationBatch {
        try p.run("add batch") { txn throws(DocError) in
            try p.mutationQueue(for: user).addBatch(localWriteTime: F.time(100), baseMutations: base, mutations: mutations, in: txn)
        }
    }

    @Test func batchIDsStrictlyIncreaseAcrossRemovalsUsersAndRestarts() throws {
        try F.withDirectory { dir in
            var ids: [BatchID] = []
            do {
                let p = try Persistence.open(directory: dir)
                for i in 0..<3 { ids.append(try Self.add(p, [Self.set("rooms/\(i)")]).batchID) }
                #expect(ids == [1, 2, 3])
                // Empty the queue: ids are still not reused.
                try p.run("remove all") { txn throws(DocError) in
                    let q = p.mutationQueue(for: "alice")
                    for b in try q.allBatches(in: txn) { try q.remove(b, in: txn) }
                    #expect(try q.isEmpty(in: txn))
                }
                ids.append(try Self.add(p, user: "bob", [Self.set("rooms/b")]).batchID)
                // A failed transaction burns its id but never reuses one.
                #expect(throws: DocError.self) {
                    try p.run("fails") { txn throws(DocError) in
                        _ = try p.mutationQueue(for: "alice").addBatch(
                            localWriteTime: F.time(1), baseMutations: [], mutations: [Self.set("rooms/x")], in: txn)
                        throw DocError(.aborted, "nope")
                    }
                }
                ids.append(try Self.add(p, [Self.set("rooms/c")]).batchID)
                p.close()
            }
            let p = try Persistence.open(directory: dir)
            ids.append(try Self.add(p, [Self.set("rooms/d")]).batchID)
            ids.append(try Self.add(p, user: "", [Self.set("rooms/e")]).batchID)
            #expect(ids == ids.sorted() && Set(ids).count == ids.count, "\(ids)")
            #expect(ids[3] == 4 && ids[4] == 6)
            try p.run("check and empty every queue") { txn throws(DocError) in
                #expect(try p.mutationQueue(for: "alice").allBatches(in: txn).map(\.batchID) == [ids[4], ids[5]])
                #expect(try p.mutationQueue(for: "alice").batch(5, in: txn) == nil)
                for user in ["alice", "bob", ""] {
                    let q = p.mutationQueue(for: user)
                    for b in try q.allBatches(in: txn) { try q.remove(b, in: txn) }
                }
            }
            p.close()
            // Every queue is empty: a restart still does not reuse an id.
            let reopened = try Persistence.open(directory: dir)
            defer { reopened.close() }
            let next = try Self.add(reopened, user: "bob", [Self.set("rooms/f")]).batchID
            #expect(next > ids.max()!)
        }
    }

    @Test func batchesRoundTripAndNextBatchWalksInOrder() throws {
        try F.withStore { p, _ in
            let base = [Mutation.set(F.key("rooms/a"), ObjectValue(["n": 1]))]
            let b1 = try Self.add(p, [Self.set("rooms/a"), .delete(F.key("rooms/b"))], base: base)
            let b2 = try Self.add(p, [.update(F.key("rooms/a"), fields: [F.field("n"): 2], transforms: [.increment(F.field("c"), by: 1)])])
            let b3 = try Self.add(p, [.tombstone(F.key("rooms/c"))])
            try p.run("read") { txn throws(DocError) in
                let q = p.mutationQueue(for: "alice")
                #expect(try q.batch(b1.batchID, in: txn) == b1)
                #expect(try q.batch(b1.batchID, in: txn)?.baseMutations == base)
                #expect(try q.nextBatches(after: batchIDUnknown, limit: 1, in: txn).first == b1)
                #expect(try q.nextBatches(after: b1.batchID, limit: 1, in: txn).first == b2)
                #expect(try q.nextBatches(after: b3.batchID, limit: 1, in: txn).first == nil)
                #expect(try q.nextBatches(after: batchIDUnknown, limit: 2, in: txn) == [b1, b2])
                #expect(try q.nextBatches(after: b1.batchID, limit: 10, in: txn) == [b2, b3])
                #expect(try q.nextBatches(after: b1.batchID, limit: 0, in: txn).isEmpty)
                #expect(try q.nextBatches(after: b3.batchID, limit: 10, in: txn).isEmpty)
                #expect(try q.nextBatches(after: batchIDUnknown, limit: 10, in: txn) { $0 != b2 } == [b1], "stops at the refused batch")
                try q.remove(b2, in: txn)
                #expect(try q.nextBatches(after: b1.batchID, limit: 1, in: txn).first == b3)
                #expect(try q.allBatches(in: txn) == [b1, b3])
                #expect(try q.count(in: txn) == 2)
                #expect(try q.highestUnacknowledgedBatchID(in: txn) == b3.batchID)
                let missing = #expect(throws: DocError.self) { try q.remove(b2, in: txn) }
                #expect(missing?.code == .notFound)
            }
        }
    }

    @Test func batchesAffectingDocumentsAndCollections() throws {
        try F.withStore { p, _ in
            let b1 = try Self.add(p, [Self.set("rooms/a"), Self.set("rooms/b")])
            let b2 = try Self.add(p, [Self.set("rooms/b")])
            let b3 = try Self.add(p, [Self.set("rooms/c"), Self.set("rooms/a/msgs/1")])
            let b4 = try Self.add(p, [Self.set("roomsX/d")], base: [Self.set("rooms/e")])
            try p.run("query") { txn throws(DocError) in
                let q = p.mutationQueue(for: "alice")
                #expect(try q.batchesAffecting([F.key("rooms/b")], in: txn).map(\.batchID) == [b1.batchID, b2.batchID])
                #expect(try q.batchesAffecting([F.key("rooms/a"), F.key("rooms/b")], in: txn).map(\.batchID) == [b1.batchID, b2.batchID])
                #expect(try q.batchesAffecting([F.key("rooms/c"), F.key("rooms/a")], in: txn).map(\.batchID) == [b1.batchID, b3.batchID])
                #expect(try q.batchesAffecting([F.key("rooms/a/msgs/1")], in: txn).map(\.batchID) == [b3.batchID])
                #expect(try q.batchesAffecting([F.key("rooms/e")], in: txn).map(\.batchID) == [b4.batchID])
                #expect(try q.batchesAffecting([F.key("rooms/zz")], in: txn).isEmpty)
                // Collections: direct children only, each batch once.
                #expect(try q.batchesAffecting(collection: F.path("rooms"), in: txn).map(\.batchID)
                    == [b1.batchID, b2.batchID, b3.batchID, b4.batchID])
                #expect(try q.batchesAffecting(collection: F.path("rooms/a/msgs"), in: txn).map(\.batchID) == [b3.batchID])
                #expect(try q.batchesAffecting(collection: F.path("roomsX"), in: txn).map(\.batchID) == [b4.batchID])
                #expect(try q.batchesAffecting(collection: F.path("room"), in: txn).isEmpty)
                // Removing a batch removes its index rows.
                try q.remove(b1, in: txn)
                #expect(try q.batchesAffecting([F.key("rooms/a")], in: txn).map(\.batchID) == [])
                #expect(try q.batchesAffecting([F.key("rooms/b")], in: txn).map(\.batchID) == [b2.batchID])
            }
        }
    }

    @Test func queuesAreIsolatedPerUser() throws {
        try F.withStore { p, _ in
            let a = try Self.add(p, user: "alice", [Self.set("rooms/a")])
            let b = try Self.add(p, user: "bob", [Self.set("rooms/a")])
            try p.run("check") { txn throws(DocError) in
                let alice = p.mutationQueue(for: "alice"), bob = p.mutationQueue(for: "bob"), nobody = p.mutationQueue(for: "")
                #expect(try alice.allBatches(in: txn) == [a])
                #expect(try bob.allBatches(in: txn) == [b])
                #expect(try nobody.isEmpty(in: txn))
                #expect(try nobody.count(in: txn) == 0)
                #expect(try nobody.highestUnacknowledgedBatchID(in: txn) == batchIDUnknown)
                #expect(try bob.batch(a.batchID, in: txn) == nil)
                #expect(try bob.batchesAffecting([F.key("rooms/a")], in: txn) == [b])
                #expect(try alice.nextBatches(after: batchIDUnknown, limit: 1, in: txn).first == a)
                try alice.remove(a, in: txn)
                #expect(try bob.allBatches(in: txn) == [b])
                #expect(try alice.isEmpty(in: txn))
                #expect(try !bob.isEmpty(in: txn))
                #expect(try alice.highestUnacknowledgedBatchID(in: txn) == batchIDUnknown)
                #expect(try bob.highestUnacknowledgedBatchID(in: txn) == b.batchID)
            }
        }
    }

    @Test func streamTokensArePerUserAndPersist() throws {
        try F.withDirectory { dir in
            do {
                let p = try Persistence.open(directory: dir)
                try p.run("tokens") { txn throws(DocError) in
                    #expect(try p.mutationQueue(for: "alice").lastStreamToken(in: txn) == [])
                    try p.mutationQueue(for: "alice").setLastStreamToken([1, 2, 3], in: txn)
                    try p.mutationQueue(for: "bob").setLastStreamToken([9], in: txn)
                    #expect(try p.mutationQueue(for: "alice").lastStreamToken(in: txn) == [1, 2, 3])
                }
                try p.run("overwrite") { txn throws(DocError) in
                    try p.mutationQueue(for: "alice").setLastStreamToken([4], in: txn)
                }
                p.close()
            }
            let p = try Persistence.open(directory: dir)
            defer { p.close() }
            try p.run("read") { txn throws(DocError) in
                #expect(try p.mutationQueue(for: "alice").lastStreamToken(in: txn) == [4])
                #expect(try p.mutationQueue(for: "bob").lastStreamToken(in: txn) == [9])
                #expect(try p.mutationQueue(for: "carol").lastStreamToken(in: txn) == [])
            }
        }
    }
}
