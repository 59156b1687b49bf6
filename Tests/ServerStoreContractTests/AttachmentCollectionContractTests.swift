import DocModel
import DocServer
import Synchronization
import Testing

/// What the attachment collector relies on, run against every store: a commit's
/// ``CommitRequest/recheck`` decides inside the store's critical section, and
/// ``TenantStore/deleteUnreferencedAttachments(among:_:)`` deletes only what no live document
/// refers to, holding back the commits that recheck while it deletes.
@Suite struct AttachmentCollectionContractTests {
    static func id(_ n: UInt8) -> AttachmentID { AttachmentID(digest: [UInt8](repeating: n, count: 32)) }

    /// The order in which the test's events happened.
    final class Events: Sendable {
        private let list = Mutex<[String]>([])
        func record(_ event: String) { list.withLock { $0.append(event) } }
        var all: [String] { list.withLock { $0 } }
    }

    @Test(arguments: StoreKind.allCases)
    func aFailingRecheckStoresNothing(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds
        let refuse: @Sendable () async throws(DocError) -> Void = { () async throws(DocError) in
            throw DocError(.aborted, "the attachment went")
        }
        let checks = Mutex(0)
        let pass: @Sendable () async throws(DocError) -> Void = { checks.withLock { $0 += 1 } }

        // Alone: the recheck's error, and nothing of the request stored.
        let error = await #expect(throws: DocError.self) {
            try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v + 1),
                                                 writes: [C.put("a/1", ["x": 1], version: v + 1)], recheck: refuse))
        }
        #expect(error?.code == .aborted && error?.message == "the attachment went")
        // In a group, after a request that passes: the whole group stores nothing.
        await #expect(throws: DocError.self) {
            try await store.commitGroup([
                CommitRequest(outcome: C.outcome("c", 2, version: v + 2), writes: [C.put("a/2", ["x": 2], version: v + 2)], recheck: pass),
                CommitRequest(outcome: C.outcome("c", 3, version: v + 3), writes: [C.put("a/3", ["x": 3], version: v + 3)], recheck: refuse),
            ])
        }
        #expect(try await store.state().lastVersion.microseconds == v)
        #expect(try await store.documents([C.key("a/1"), C.key("a/2"), C.key("a/3")]).documents.isEmpty)
        for batch in 1...3 { #expect(try await store.outcome(of: BatchKey(clientID: "c", batchID: batch)) == nil) }

        // A passing recheck runs once per commit, and the commit is stored.
        #expect(try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v + 1),
                                                     writes: [C.put("a/1", ["x": 1], version: v + 1)], recheck: pass))
            == .stored(previousVersion: C.v(v)))
        #expect(try await store.documents([C.key("a/1")]).documents.count == 1)
        // A batch that already has its outcome is answered from it, whatever its recheck says.
        #expect(try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v + 5),
                                                     writes: [C.put("a/1", ["x": 9], version: v + 5)], recheck: refuse))
            == .duplicate(C.outcome("c", 1, version: v + 1)))
        #expect(try await store.documents([C.key("a/1")]).documents[C.key("a/1")]?.data["x"] == 1)
        let groupChecks = checks.withLock { $0 }
        // The group's passing recheck and the lone commit's; not the duplicate's.
        #expect(groupChecks == 2)
    }

    @Test(arguments: StoreKind.allCases)
    func deletionSkipsWhatLiveDocumentsReferToAndHoldsRecheckingCommitsBack(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds
        let (live, tombstoned, unreferenced, declined) = (Self.id(1), Self.id(2), Self.id(3), Self.id(4))
        _ = try await store.commit(CommitRequest(outcome: C.outcome("c", 1, version: v + 1), writes: [
            C.put("forms/live", ["photo": .attachment(live)], version: v + 1),
            C.put("forms/gone", ["photo": .attachment(tombstoned), tombstoneField: .integer(1)], version: v + 1),
        ]))

        let events = Events()
        let (inside, enter) = AsyncStream<Void>.makeStream()
        let (resume, release) = AsyncStream<Void>.makeStream()
        let deletion = Task {
            try await store.deleteUnreferencedAttachments(among: [live, tombstoned, unreferenced, declined]) { id throws(DocError) -> Bool in
                if id == tombstoned {
                    events.record("deleting")
                    enter.yield()
                    for await _ in resume { break }
                }
                events.record("deleted \(id == declined ? "declined" : "")")
                return id != declined
            }
        }
        for await _ in inside { break }
        // A commit that rechecks, while the deletion holds the tenant: its recheck waits.
        let commit = Task {
            try await store.commit(CommitRequest(
                outcome: C.outcome("c", 2, version: v + 2), writes: [C.put("forms/new", ["photo": .attachment(unreferenced)], version: v + 2)],
                recheck: { events.record("recheck") }))
        }
        // Time for a recheck that did not wait to run (it would come before the deletions).
        try await Task.sleep(for: .milliseconds(300))
        release.yield()
        let deleted = try await deletion.value
        #expect(try await commit.value == .stored(previousVersion: C.v(v + 1)))

        // The live document's attachment was not offered; the one only a tombstone holds was;
        // `delete`'s answer decides what is reported.
        #expect(deleted == [tombstoned, unreferenced])
        #expect(events.all == ["deleting", "deleted ", "deleted ", "deleted declined", "recheck"])
    }

    @Test(arguments: StoreKind.allCases)
    func aDeletionThatFailsReleasesTheTenant(_ kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        defer { Task { await fixture.tearDown() } }
        let store = try await fixture.tenant("acme")
        let v = try await store.state().lastVersion.microseconds
        let deleted = Mutex<[AttachmentID]>([])
        let error = await #expect(throws: DocError.self) {
            try await store.deleteUnreferencedAttachments(among: [Self.id(1), Self.id(2), Self.id(3)]) { id throws(DocError) -> Bool in
                guard id != Self.id(2) else { throw DocError(.unavailable, "the blob store is gone") }
                deleted.withLock { $0.append(id) }
                return true
            }
        }
        #expect(error?.message == "the blob store is gone")
        // What was deleted before the failure stays deleted (the caller's business); nothing
        // after it was attempted.
        #expect(deleted.withLock { $0 } == [Self.id(1)])
        // The tenant is free again: a rechecking commit and another collection go through.
        let rechecked = Mutex(false)
        #expect(try await store.commit(CommitRequest(
            outcome: C.outcome("c", 1, version: v + 1), writes: [C.put("forms/a", ["photo": .attachment(Self.id(3))], version: v + 1)],
            recheck: { rechecked.withLock { $0 = true } })) == .stored(previousVersion: C.v(v)))
        #expect(rechecked.withLock { $0 })
        #expect(try await store.deleteUnreferencedAttachments(among: [Self.id(2), Self.id(3)]) { _ in true } == [Self.id(2)])
    }
}
