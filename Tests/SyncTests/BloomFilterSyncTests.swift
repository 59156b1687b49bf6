import DocModel
import DocServer
import DocTestSupport
import Testing
@testable import DocCache

/// Existence filters with bloom filters between a client and the real server core: a listener
/// resumed from a token the server's change log no longer reaches learns which of its
/// documents are gone from the filter, instead of downloading its whole query again
/// (docs/protocol.md, "Adding a target").
@Suite("Existence filters with bloom filters through the real server core")
struct BloomFilterSyncTests {
    /// The tasks left on the server after ``goOfflineWhileTasksChange``.
    static let remaining = ["t0", "t1", "t10", "t11", "t12", "t3", "t4", "t6", "t7", "t8"]

    /// Twelve tasks, which the field device's listener has from the server; then the device
    /// goes offline, and on the server `t2` is deleted (a tombstone), `t5` and `t9` are purged,
    /// `t1` is edited and `t12` added, and the change log is pruned past the device's resume
    /// token (the server runs with a retention of 0). Returns the transport's counters from
    /// just before the device comes back.
    private func goOfflineWhileTasksChange(
        _ harness: SyncHarness, office: DocumentStore, field: DocumentStore, events: Recorder<QuerySnapshot>
    ) async throws -> InProcessTransport.Stats {
        for i in 0..<12 { _ = try await office.collection("tasks").document("t\(i)").setData(["n": .value(.integer(Int64(i)))]).committed }
        #expect(await eventually { events.last.map { $0.ids.count == 12 && !$0.metadata.isFromCache } ?? false })

        try await field.disableNetwork()
        _ = try await office.document("tasks/t2").delete().committed
        _ = try await office.document("tasks/t5").purge().committed
        _ = try await office.document("tasks/t9").purge().committed
        _ = try await office.document("tasks/t1").updateData(["n": -1]).committed
        _ = try await office.document("tasks/t12").setData(["n": 12]).committed
        let core = try #require(harness.host.core)
        #expect(await core.runMaintenance().changesPruned > 0)
        return harness.transport.stats
    }

    /// Runs ``goOfflineWhileTasksChange`` with a listener of `tasks` (limit 100) on the field
    /// device, brings the device back, waits until the listener shows the server's remaining
    /// tasks, then calls `check` with the harness, the field store, the listener's snapshots and
    /// the transport's counters from just before the device came back.
    private func resumeAfterTasksChanged(
        _ configuration: ServerConfiguration,
        check: @escaping @Sendable (SyncHarness, DocumentStore, Recorder<QuerySnapshot>, InProcessTransport.Stats) async throws -> Void
    ) async throws {
        try await SyncHarness.run(configuration: configuration) { harness in
            let office = try await harness.openStore(device: "office", user: "office")
            let field = try await harness.openStore(device: "field", user: "field")
            let events = Recorder<QuerySnapshot>()
            let listener = try await field.collection("tasks").limit(to: 100).addSnapshotListener(includeMetadataChanges: true) {
                events.record($0)
            }
            defer { listener.remove() }
            let before = try await goOfflineWhileTasksChange(harness, office: office, field: field, events: events)

            try await field.enableNetwork()
            #expect(await eventually {
                events.last.map { $0.ids.sorted() == Self.remaining && !$0.metadata.isFromCache } ?? false
            })
            try await check(harness, field, events, before)
        }
    }

    @Test func aResumedListenerDropsExactlyTheDeletedDocumentsWithoutAReQuery() async throws {
        try await resumeAfterTasksChanged(ServerConfiguration(changeLogRetentionMicros: 0)) { harness, field, events, before in
            let last = try #require(events.last)
            #expect(last.documents.first { $0.documentID == "t1" }?.get("n") == .integer(-1))

            // The server's bloom filter ruled out exactly the three documents gone.
            var expected = ExistenceFilterCounts()
            expected.mismatches = 1
            expected.resolvedByBloomFilter = 1
            expected.documentsRemovedByBloomFilter = 3
            #expect(await field.core.existenceFilterCounts == expected)
            // No full re-query: the query was resumed once, and the only listens without a
            // token are the three limbo resolutions confirming the removed documents.
            let after = harness.transport.stats
            #expect(after.resumedListens - before.resumedListens == 1)
            #expect(after.freshListens - before.freshListens == 3)
            // Documents sent: the edited and the new task, and the tombstone of t2 to its limbo
            // resolution (t5 and t9 no longer exist); not the unchanged ones.
            #expect(after.frames["documentChange", default: 0] - before.frames["documentChange", default: 0] == 3)
        }
    }

    @Test func aFalsePositiveFallsBackToAFullReQuery() async throws {
        // A filter of one bit: every name tests positive, so no document is ruled out and the
        // count cannot match.
        var configuration = ServerConfiguration(changeLogRetentionMicros: 0)
        configuration.bloomFilterFalsePositiveRate = 0.99
        try await resumeAfterTasksChanged(configuration) { harness, field, _, before in
            var expected = ExistenceFilterCounts()
            expected.mismatches = 1
            expected.bloomFilterFalsePositives = 1
            #expect(await field.core.existenceFilterCounts == expected)
            // The query was listened to again without a token, and all ten results sent again.
            let after = harness.transport.stats
            #expect(after.freshListens - before.freshListens >= 1)
            #expect(after.frames["documentChange", default: 0] - before.frames["documentChange", default: 0] >= 10)
        }
    }
}
