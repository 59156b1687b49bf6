import DocTestSupport
import DocModel
import Testing
@testable import DocCache

/// Rejected writes are kept (issue 17): a rejection still reverts the local view, and the
/// batch — the user's data, the error, the server's version beside it — stays in
/// `failedWrites()` across a reopen until it is retried, resolved or discarded.
@Suite("Failed writes are kept, retried, resolved or discarded")
struct FailedWriteTests {
    /// Alice commits v2 while Bob is offline; Bob's write conditioned on v1 is rejected.
    /// Returns Bob's store, the failed write, v2 and the harness's directory name for Bob.
    private func conflict(_ harness: SyncHarness) async throws -> (alice: DocumentStore, bob: DocumentStore, failed: FailedWrite, v2: SnapshotVersion) {
        let alice = try await harness.openStore(device: "alice", user: "alice")
        let bob = try await harness.openStore(device: "bob", user: "bob")
        let v1 = try await alice.document("accounts/a1").setData(["balance": 100, "owner": "ann", "address": ["city": "Oslo", "zip": "0150"]]).committed
        _ = try await bob.document("accounts/a1").getDocument(source: .server)
        try await bob.disableNetwork()
        let v2 = try await alice.document("accounts/a1").updateData(["balance": 90, "address.city": "Bergen"]).committed
        let stale = try await bob.document("accounts/a1").updateData(["balance": 50, "note": "bob"], ifVersion: v1)
        // Bob learns v2 (his listen brings it) and then his write is rejected.
        try await bob.enableNetwork()
        let rejection = await #expect(throws: DocError.self) { _ = try await stale.committed }
        #expect(rejection?.code == .failedPrecondition)
        // Bob's cache held v1; after the rejection the store reads the document from the
        // server by itself, and the conflict view shows v2.
        #expect(await eventually { (try? await bob.failedWrites().first?.conflicts.first?.theirsVersion) == v2 })
        let failed = try #require(try await bob.failedWrites().first)
        #expect(failed.id == stale.batchID)
        return (alice, bob, failed, v2)
    }

    @Test func aRejectedWriteIsKeptWithItsDataAndSurvivesAReopen() async throws {
        try await SyncHarness.run { harness in
            let bob = try await harness.openStore(device: "bob", user: "bob")
            let updates = bob.failedWriteUpdates()
            let second = Task { () -> [FailedWrite]? in
                var seen = 0
                for await list in updates {
                    seen += 1
                    if seen == 2 { return list }   // the replayed empty list, then the rejection
                }
                return nil
            }
            // An update of a document that does not exist: rejected with notFound.
            let write = try await bob.document("notes/missing").updateData(["text": "typed offline", "n": 3])
            await #expect(throws: DocError.self) { _ = try await write.committed }

            let failed = try await bob.failedWrites()
            #expect(failed.count == 1)
            let record = try #require(failed.first)
            #expect(record.id == write.batchID)
            #expect(record.error.code == .notFound)
            #expect(record.attempts >= 1)
            #expect(record.writes.map(\.path) == ["notes/missing"])
            #expect(record.writes.first?.kind == .update)
            #expect(record.writes.first?.data == ["text": .string("typed offline"), "n": .integer(3)])
            #expect(record.rejectedAt >= record.localWriteTime)
            #expect(await second.value?.map(\.id) == [write.batchID], "the update stream saw the new failed write")
            #expect(try await bob.document("notes/missing").getDocument(source: .cache).exists == false,
                    "the rejection still reverted the local view")
            #expect(await bob.pendingWriteCount == 0)

            // Closed and reopened: still there, exactly once, with the same contents.
            await bob.close()
            let reopened = try await harness.openStore(device: "bob", user: "bob")
            let again = try await reopened.failedWrites()
            #expect(again == failed)
            #expect(again.first?.writes == record.writes)
            #expect(again.first?.error == record.error)
        }
    }

    @Test func theConflictViewShowsBothVersionsOfEachChangedField() async throws {
        try await SyncHarness.run { harness in
            let (_, _, failed, v2) = try await conflict(harness)
            #expect(failed.error.code == .failedPrecondition)
            let conflict = try #require(failed.conflicts.first)
            #expect(failed.conflicts.count == 1)
            #expect(conflict.path == "accounts/a1")
            #expect(conflict.serverVersionKnown)
            #expect(conflict.theirsVersion == v2)
            #expect(conflict.theirs?["balance"] == .integer(90))
            #expect(conflict.mine?["balance"] == .integer(50))
            #expect(conflict.mine?["note"] == .string("bob"))
            let changes = Dictionary(uniqueKeysWithValues: conflict.changedFields.map { ($0.field, $0) })
            #expect(Set(changes.keys) == ["balance", "note"], "\(conflict.changedFields)")
            #expect(changes["balance"]?.mine == .integer(50))
            #expect(changes["balance"]?.theirs == .integer(90))
            #expect(changes["note"]?.mine == .string("bob"))
            #expect(changes["note"]?.theirs == nil)
        }
    }

    @Test func aMergedResolutionCommitsAndAThirdChangeIsCaughtAgain() async throws {
        try await SyncHarness.run { harness in
            let (alice, bob, failed, _) = try await conflict(harness)
            // Data over the document limit is refused before anything changes.
            let tooBig = await #expect(throws: DocError.self) {
                try await bob.resolveFailedWrite(failed, keeping: .merged(["blob": .value(.string(String(repeating: "y", count: 1_100_000)))]))
            }
            #expect(tooBig?.code == .invalidArgument)
            #expect(try await bob.failedWrites().map(\.id) == [failed.id])
            // Keep theirs for the balance, mine for the note.
            let merged: [String: FieldValue] = ["balance": 90, "owner": "ann", "address": ["city": "Bergen", "zip": "0150"], "note": "bob"]
            let resolution = try #require(try await bob.resolveFailedWrite(failed, keeping: .merged(merged)))
            #expect(try await bob.failedWrites().isEmpty, "the failed write is gone with the resolution's batch")
            _ = try await resolution.committed
            let server = try await alice.document("accounts/a1").getDocument(source: .server)
            #expect(server.get("note") == .string("bob"))
            #expect(server.int("balance") == 90)

            // Again: Bob's next edit conflicts with Alice's third change; resolving with mine
            // is conditioned on the version shown, so a fourth change is caught, not overwritten.
            let v3 = try #require(server.version)
            try await bob.disableNetwork()
            _ = try await alice.document("accounts/a1").updateData(["balance": 80]).committed
            let edit = try await bob.document("accounts/a1").updateData(["note": "bob again"], ifVersion: v3)
            try await bob.enableNetwork()
            await #expect(throws: DocError.self) { _ = try await edit.committed }
            let v4 = try #require(try await alice.document("accounts/a1").getDocument(source: .server).version)
            #expect(await eventually { (try? await bob.failedWrites().first?.conflicts.first?.theirsVersion) == v4 })
            let second = try #require(try await bob.failedWrites().first)
            // Alice changes the document once more before Bob resolves.
            _ = try await alice.document("accounts/a1").updateData(["balance": 70]).committed
            let mine = try #require(try await bob.resolveFailedWrite(second, keeping: .mine))
            let caught = await #expect(throws: DocError.self) { _ = try await mine.committed }
            #expect(caught?.code == .failedPrecondition)
            #expect(try await alice.document("accounts/a1").getDocument(source: .server).int("balance") == 70,
                    "the resolution did not overwrite the change it had not seen")
            let third = try await bob.failedWrites()
            #expect(third.count == 1, "the caught resolution is a failed write again")
            #expect(third.first?.id == mine.batchID)
        }
    }

    @Test func retryDiscardAndBadInput() async throws {
        try await SyncHarness.run { harness in
            let bob = try await harness.openStore(device: "bob", user: "bob")
            let write = try await bob.document("notes/n1").updateData(["text": "draft"])
            await #expect(throws: DocError.self) { _ = try await write.committed }
            let id = try #require(try await bob.failedWrites().first?.id)

            // Unknown ids and over-limit edits: clear errors, nothing lost.
            let unknown = await #expect(throws: DocError.self) { try await bob.retryFailedWrite(id + 1_000) }
            #expect(unknown?.code == .notFound)
            // Over-limit data cannot even be put into the batch a retry would send: WriteBatch
            // checks each write when it is added.
            var tooBig = bob.batch()
            let limit = #expect(throws: DocError.self) {
                try tooBig.setData(["blob": .value(.string(String(repeating: "x", count: 1_100_000)))], for: bob.document("notes/n1"))
            }
            #expect(limit?.code == .invalidArgument)
            #expect(tooBig.count == 0)
            // Retrying with that (empty) batch is refused, and changes nothing.
            let empty = await #expect(throws: DocError.self) { try await bob.retryFailedWrite(id, with: tooBig) }
            #expect(empty?.code == .invalidArgument)
            #expect(try await bob.failedWrites().map(\.id) == [id], "a refused retry keeps the failed write")
            // notes/n1 was never read here: after the rejection the store read it from the
            // server, so the conflict view knows it does not exist.
            #expect(await eventually { (try? await bob.failedWrites().first?.conflicts.first?.serverVersionKnown) == true })
            let conflict = try #require(try await bob.failedWrites().first?.conflicts.first)
            #expect(conflict.theirs == nil)
            #expect(conflict.mine?["text"] == .string("draft"))

            // An edited retry: a set instead of the update, which the server accepts.
            var edited = bob.batch()
            try edited.setData(["text": "draft"], for: bob.document("notes/n1"))
            let retried = try await bob.retryFailedWrite(id, with: edited)
            #expect(try await bob.failedWrites().isEmpty)
            #expect(try await bob.pendingWrites().allSatisfy { $0.batchID == retried.batchID },
                    "the retry is the only batch queued")
            _ = try await retried.committed
            let again = await #expect(throws: DocError.self) { try await bob.retryFailedWrite(id) }
            #expect(again?.code == .notFound, "a failed write is retried once")

            // Discard: once.
            let other = try await bob.document("notes/n2").updateData(["text": "x"])
            await #expect(throws: DocError.self) { _ = try await other.committed }
            let otherID = try #require(try await bob.failedWrites().first?.id)
            try await bob.discardFailedWrite(otherID)
            #expect(try await bob.failedWrites().isEmpty)
            let twice = await #expect(throws: DocError.self) { try await bob.discardFailedWrite(otherID) }
            #expect(twice?.code == .notFound)

            // A plain retry re-queues the same writes at the end of the queue.
            let third = try await bob.document("notes/n3").updateData(["text": "y"])
            await #expect(throws: DocError.self) { _ = try await third.committed }
            let thirdID = try #require(try await bob.failedWrites().first?.id)
            _ = try await harness.openStore(device: "carol", user: "carol").document("notes/n3").setData(["text": "created"]).committed
            let plain = try await bob.retryFailedWrite(thirdID)
            #expect(plain.batchID > thirdID)
            _ = try await plain.committed
            #expect(try await bob.document("notes/n3").getDocument(source: .server).get("text") == .string("y"))
        }
    }
}
