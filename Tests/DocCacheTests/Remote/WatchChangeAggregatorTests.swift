import Testing
@testable import DocCache
import DocModel
import DocTestTraits

private typealias F = RemoteFixtures

/// The behaviours of Firestore's `remote_event_test`, plus the single-document existence
/// filter and the all-targets form of target changes.
@Suite("Watch change aggregator", .cpuBound)
struct WatchChangeAggregatorTests {
    let provider = FakeTargetMetadataProvider()
    let resumeToken1 = F.token("resume-1")

    private func queries(_ ids: TargetID...) -> [TargetData] { ids.map { F.queryTarget($0) } }

    /// An aggregator over `targets` (each with `existingKeys` synced), with `outstanding`
    /// unanswered requests per target, fed `changes` and then a `noChange` with
    /// ``resumeToken1`` for every target.
    private func makeAggregator(
        _ targets: [TargetData], outstanding: [TargetID: Int] = [:], existingKeys: Set<DocumentKey> = [],
        _ changes: [WatchChange] = []
    ) -> WatchChangeAggregator {
        let aggregator = WatchChangeAggregator(metadataProvider: provider)
        for target in targets {
            provider.setSyncedKeys(existingKeys, for: target)
        }
        for (targetID, count) in outstanding {
            for _ in 0..<count { aggregator.recordPendingTargetRequest(targetID) }
        }
        for change in changes {
            aggregator.handle(change)
        }
        aggregator.handle(.target(.init(state: .noChange, targetIDs: targets.map(\.targetID), resumeToken: resumeToken1)))
        return aggregator
    }

    private func docChange(_ updated: [TargetID], _ removed: [TargetID], _ document: MaybeDocument) -> WatchChange {
        .document(.init(updatedTargetIDs: updated, removedTargetIDs: removed, key: document.key, document: document))
    }

    private func targetChange(_ state: WatchChange.TargetStateChange.State, _ ids: [TargetID], _ token: ResumeToken = []) -> WatchChange {
        .target(.init(state: state, targetIDs: ids, resumeToken: token))
    }

    @Test func accumulatesDocumentAddsAndRemovesPerTarget() {
        let existing = F.doc("docs/1", 1)
        let new = F.doc("docs/2", 2, value: 2)
        let event = makeAggregator(
            queries(1, 2, 3, 4, 5, 6), existingKeys: [existing.key],
            [docChange([1, 2, 3], [4, 5, 6], existing), docChange([1, 4], [2, 6], new)]
        ).createRemoteEvent(at: F.version(3))

        #expect(event.snapshotVersion == F.version(3))
        #expect(event.documentUpdates == [existing.key: existing, new.key: new])
        #expect(event.targetChanges.count == 6)
        let t = resumeToken1
        #expect(event.targetChanges[1] == TargetChange(resumeToken: t, addedDocuments: [new.key], modifiedDocuments: [existing.key]))
        #expect(event.targetChanges[2] == TargetChange(resumeToken: t, modifiedDocuments: [existing.key]))
        #expect(event.targetChanges[3] == TargetChange(resumeToken: t, modifiedDocuments: [existing.key]))
        #expect(event.targetChanges[4] == TargetChange(resumeToken: t, addedDocuments: [new.key], removedDocuments: [existing.key]))
        #expect(event.targetChanges[5] == TargetChange(resumeToken: t, removedDocuments: [existing.key]))
        #expect(event.targetChanges[6] == TargetChange(resumeToken: t, removedDocuments: [existing.key]))
    }

    @Test func ignoresChangesForTargetsWithPendingResponses() {
        let doc1 = F.doc("docs/1", 1)
        let doc2 = F.doc("docs/2", 2)
        // Two requests outstanding (an unwatch and a re-watch): doc1 arrives before both are
        // answered and belongs to the old listen.
        let aggregator = makeAggregator(
            queries(1), outstanding: [1: 2],
            [docChange([1], [], doc1), targetChange(.removed, [1]), targetChange(.added, [1]), docChange([1], [], doc2)])
        #expect(aggregator.targetState(for: 1)?.isPending == false)
        let event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates == [doc2.key: doc2])
        #expect(event.targetChanges.count == 1)
        #expect(event.targetChanges[1]?.addedDocuments == [doc2.key])
    }

    @Test func ignoresChangesForRemovedTargets() {
        let doc1 = F.doc("docs/1", 1)
        let aggregator = makeAggregator([], outstanding: [1: 1], [docChange([1], [], doc1), targetChange(.removed, [1])])
        let event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates.isEmpty)
        #expect(event.targetChanges.isEmpty)
        #expect(aggregator.targetState(for: 1) == nil, "an answered removal forgets the target")
    }

    @Test func ignoresChangesForTargetsNoLongerListenedTo() {
        let aggregator = makeAggregator(queries(1))
        provider.targets[1] = nil
        aggregator.handle(docChange([1], [], F.doc("docs/1", 1)))
        aggregator.handle(targetChange(.current, [1], F.token("later")))
        let event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates.isEmpty)
        #expect(event.targetChanges.isEmpty)
    }

    @Test func keepsResetMappingEvenWithUpdates() {
        let doc1 = F.doc("docs/1", 1)
        let doc2 = F.doc("docs/2", 2)
        let doc3 = F.doc("docs/3", 3)
        let event = makeAggregator(
            queries(1), existingKeys: [doc1.key],
            [
                docChange([1], [], doc1), targetChange(.reset, [1]), docChange([1], [], doc2),
                docChange([1], [], doc3), docChange([], [1], doc2),
            ]
        ).createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates == [doc1.key: doc1, doc2.key: doc2, doc3.key: doc3])
        #expect(event.targetChanges.count == 1)
        // doc1 was synced and not re-sent after the reset: removed. doc2 came and went.
        #expect(event.targetChanges[1] == TargetChange(resumeToken: resumeToken1, addedDocuments: [doc3.key], removedDocuments: [doc1.key]))
    }

    @Test func singleResetDropsTheResumeToken() {
        let aggregator = makeAggregator(queries(1))
        aggregator.handle(targetChange(.reset, [1]))
        let event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates.isEmpty)
        #expect(event.targetChanges == [1: TargetChange()])
    }

    @Test func handlesTargetAddAndRemovalInTheSameBatch() {
        let doc1a = F.doc("docs/1", 1, value: 1)
        let doc1b = F.doc("docs/1", 1, value: 2)
        let event = makeAggregator(
            queries(1, 2), existingKeys: [doc1a.key], [docChange([1], [2], doc1a), docChange([2], [1], doc1b)]
        ).createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates == [doc1b.key: doc1b])
        #expect(event.targetChanges[1] == TargetChange(resumeToken: resumeToken1, removedDocuments: [doc1b.key]))
        #expect(event.targetChanges[2] == TargetChange(resumeToken: resumeToken1, modifiedDocuments: [doc1b.key]))
    }

    @Test func currentMarksTheTargetCurrent() {
        let event = makeAggregator(queries(1), [targetChange(.current, [1], resumeToken1)])
            .createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates.isEmpty)
        #expect(event.targetChanges == [1: TargetChange(resumeToken: resumeToken1, current: true)])
    }

    @Test func targetAddedResetsPreviousState() {
        let doc1 = F.doc("docs/1", 1)
        let doc2 = F.doc("docs/2", 2)
        let event = makeAggregator(
            queries(1, 3), outstanding: [1: 2, 2: 1], existingKeys: [doc2.key],
            [
                docChange([1, 3], [2], doc1), targetChange(.current, [1, 2, 3], resumeToken1),
                targetChange(.removed, [1]), targetChange(.removed, [2]), targetChange(.added, [1]),
                docChange([1], [3], doc2),
            ]
        ).createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates == [doc1.key: doc1, doc2.key: doc2])
        #expect(event.targetChanges.count == 2)
        // Target 1 was re-added: doc1 and `current` from before the re-add are gone.
        #expect(event.targetChanges[1] == TargetChange(resumeToken: resumeToken1, modifiedDocuments: [doc2.key]))
        #expect(
            event.targetChanges[3]
                == TargetChange(resumeToken: resumeToken1, current: true, addedDocuments: [doc1.key], removedDocuments: [doc2.key]))
    }

    @Test func noChangeStillMarksTheAffectedTargets() {
        let aggregator = makeAggregator(queries(1))
        aggregator.handle(targetChange(.noChange, [1], resumeToken1))
        let event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates.isEmpty)
        #expect(event.targetChanges == [1: TargetChange(resumeToken: resumeToken1)])
    }

    @Test func targetChangeWithoutIDsAppliesToEveryActiveTarget() {
        let aggregator = makeAggregator(queries(1, 2), outstanding: [3: 1])
        provider.targets[3] = F.queryTarget(3)
        aggregator.handle(targetChange(.current, [], F.token("all")))
        let event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.targetChanges[1] == TargetChange(resumeToken: F.token("all"), current: true))
        #expect(event.targetChanges[2] == TargetChange(resumeToken: F.token("all"), current: true))
        #expect(event.targetChanges[3] == nil, "pending targets are not affected")
    }

    @Test func existenceFilterMismatchClearsTheTarget() {
        let doc1 = F.doc("docs/1", 1)
        let doc2 = F.doc("docs/2", 2)
        let aggregator = makeAggregator(
            queries(1, 2), existingKeys: [doc1.key, doc2.key],
            [docChange([1], [], doc1), docChange([1], [], doc2), targetChange(.current, [1], resumeToken1)])
        var event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates == [doc1.key: doc1, doc2.key: doc2])
        #expect(event.targetChanges[1] == TargetChange(resumeToken: resumeToken1, current: true, modifiedDocuments: [doc1.key, doc2.key]))
        #expect(event.targetChanges[2] == TargetChange(resumeToken: resumeToken1))
        #expect(event.targetMismatches.isEmpty)

        // The server counts one document; the client has two.
        aggregator.handle(.existenceFilter(targetID: 1, count: 1))
        event = aggregator.createRemoteEvent(at: F.version(4))

        #expect(event.targetChanges == [1: TargetChange(removedDocuments: [doc1.key, doc2.key])])
        #expect(event.targetMismatches == [1: .existenceFilterMismatch])
        #expect(event.documentUpdates.isEmpty)
    }

    @Test func matchingExistenceFilterChangesNothing() {
        let doc1 = F.doc("docs/1", 1)
        let aggregator = makeAggregator(queries(1), existingKeys: [doc1.key], [targetChange(.current, [1], resumeToken1)])
        _ = aggregator.createRemoteEvent(at: F.version(3))
        // One synced document plus one added in this event: two.
        aggregator.handle(docChange([1], [], F.doc("docs/2", 4)))
        aggregator.handle(.existenceFilter(targetID: 1, count: 2))
        let event = aggregator.createRemoteEvent(at: F.version(4))

        #expect(event.targetMismatches.isEmpty)
        #expect(event.targetChanges[1] == TargetChange(resumeToken: resumeToken1, current: true, addedDocuments: [F.key("docs/2")]))
    }

    @Test func existenceFilterMismatchRemovesCurrentChanges() {
        let aggregator = makeAggregator(queries(1))
        aggregator.handle(targetChange(.current, [1], resumeToken1))
        let doc1 = F.doc("docs/1", 1)
        aggregator.handle(docChange([1], [], doc1))
        aggregator.handle(.existenceFilter(targetID: 1, count: 0))
        let event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates == [doc1.key: doc1])
        #expect(event.targetMismatches.count == 1)
        #expect(event.targetChanges == [1: TargetChange()], "the reset dropped the token, `current` and the add")
    }

    @Test func existenceFilterOfZeroOnADocumentTargetDeletesTheDocument() {
        let limbo = F.limboTarget(1)
        let aggregator = makeAggregator([limbo])
        aggregator.handle(.existenceFilter(targetID: 1, count: 0))
        let event = aggregator.createRemoteEvent(at: F.version(3))

        let limboKey = F.key("coll/limbo")
        #expect(event.documentUpdates == [limboKey: .noDocument(NoDocument(key: limboKey, version: .none))])
        #expect(event.targetMismatches.isEmpty, "a document target is never reset by a filter")
    }

    @Test func documentUpdatesAcrossEvents() {
        let doc1 = F.doc("docs/1", 1)
        let doc2 = F.doc("docs/2", 2)
        let aggregator = makeAggregator(queries(1), [docChange([1], [], doc1), docChange([1], [], doc2)])
        var event = aggregator.createRemoteEvent(at: F.version(3))
        #expect(event.documentUpdates == [doc1.key: doc1, doc2.key: doc2])

        provider.setSyncedKeys([doc1.key, doc2.key], for: F.queryTarget(1))
        let deleted1 = F.deletedDoc("docs/1", 3)
        let updated2 = F.doc("docs/2", 3, value: 2)
        let doc3 = F.doc("docs/3", 3)
        aggregator.handle(docChange([], [1], deleted1))
        aggregator.handle(docChange([1], [], updated2))
        aggregator.handle(docChange([1], [], doc3))
        event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates == [doc1.key: deleted1, doc2.key: updated2, doc3.key: doc3])
        #expect(
            event.targetChanges == [
                1: TargetChange(
                    resumeToken: resumeToken1, addedDocuments: [doc3.key], modifiedDocuments: [doc2.key],
                    removedDocuments: [doc1.key]),
            ])
    }

    @Test func deleteInAnUpdatedTargetRemovesTheDocument() {
        let doc1 = F.doc("docs/1", 1)
        let deleted = F.deletedDoc("docs/1", 2)
        let event = makeAggregator(queries(1), existingKeys: [doc1.key], [docChange([1], [], deleted)])
            .createRemoteEvent(at: F.version(2))

        #expect(event.documentUpdates == [doc1.key: deleted])
        #expect(event.targetChanges[1]?.removedDocuments == [doc1.key])
    }

    @Test func resumeTokensAreKeptPerTarget() {
        let aggregator = makeAggregator(queries(1, 2))
        let resumeToken2 = F.token("resume-2")
        aggregator.handle(targetChange(.current, [1], resumeToken1))
        aggregator.handle(targetChange(.current, [2], resumeToken2))
        let event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.targetChanges[1] == TargetChange(resumeToken: resumeToken1, current: true))
        #expect(event.targetChanges[2] == TargetChange(resumeToken: resumeToken2, current: true))
    }

    @Test func lastResumeTokenWins() {
        let aggregator = makeAggregator(queries(1, 2))
        aggregator.handle(targetChange(.current, [1], resumeToken1))
        aggregator.handle(targetChange(.noChange, [1], F.token("resume-2")))
        aggregator.handle(targetChange(.noChange, [2], F.token("resume-3")))
        aggregator.handle(targetChange(.noChange, [2], []))
        let event = aggregator.createRemoteEvent(at: F.version(3))

        #expect(event.targetChanges[1] == TargetChange(resumeToken: F.token("resume-2"), current: true))
        #expect(event.targetChanges[2] == TargetChange(resumeToken: F.token("resume-3")), "an empty token changes nothing")
    }

    @Test func eventsOnlyIncludeTargetsThatChanged() {
        let aggregator = makeAggregator(queries(1, 2))
        _ = aggregator.createRemoteEvent(at: F.version(3))
        aggregator.handle(docChange([2], [], F.doc("docs/9", 4)))
        let event = aggregator.createRemoteEvent(at: F.version(4))

        #expect(Array(event.targetChanges.keys) == [2])
        #expect(event.targetChanges[2]?.resumeToken == resumeToken1, "the token is kept across events")
    }

    @Test func synthesizesDeletesForCurrentLimboTargets() {
        let event = makeAggregator([F.limboTarget(1)], [targetChange(.current, [1])])
            .createRemoteEvent(at: F.version(3))

        let limboKey = F.key("coll/limbo")
        #expect(event.documentUpdates[limboKey] == .noDocument(NoDocument(key: limboKey, version: F.version(3))))
        #expect(event.resolvedLimboDocuments.contains(limboKey))
    }

    @Test func doesNotSynthesizeDeletesForTargetsNotCurrent() {
        let event = makeAggregator([F.limboTarget(1)], [targetChange(.noChange, [1])])
            .createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates.isEmpty)
        #expect(event.resolvedLimboDocuments.isEmpty)
    }

    @Test func doesNotSynthesizeDeletesForQueryTargets() {
        let event = makeAggregator(queries(1), [targetChange(.current, [1])]).createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates.isEmpty)
        #expect(event.resolvedLimboDocuments.isEmpty)
    }

    @Test func doesNotSynthesizeDeletesForExistingDocuments() {
        let event = makeAggregator([F.limboTarget(3)], existingKeys: [F.key("coll/limbo")], [targetChange(.current, [3])])
            .createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates.isEmpty)
        #expect(event.resolvedLimboDocuments.isEmpty)
    }

    @Test func doesNotSynthesizeDeletesWhenTheDocumentArrived() {
        let limbo = F.doc("coll/limbo", 2)
        let event = makeAggregator([F.limboTarget(1)], [docChange([1], [], limbo), targetChange(.current, [1])])
            .createRemoteEvent(at: F.version(3))

        #expect(event.documentUpdates == [limbo.key: limbo])
        #expect(event.resolvedLimboDocuments == [limbo.key])
    }

    @Test func separatesAddedModifiedAndRemovedDocuments() {
        let new = F.doc("docs/new", 1)
        let existing = F.doc("docs/existing", 1)
        let deleted = F.deletedDoc("docs/deleted", 1)
        let missing = F.deletedDoc("docs/missing", 1)
        let event = makeAggregator(
            [F.limboTarget(1)], existingKeys: [existing.key, deleted.key],
            [docChange([1], [], new), docChange([1], [], existing), docChange([], [1], deleted), docChange([], [1], missing)]
        ).createRemoteEvent(at: F.version(3))

        #expect(
            event.targetChanges[1]
                == TargetChange(
                    resumeToken: resumeToken1, addedDocuments: [new.key], modifiedDocuments: [existing.key],
                    removedDocuments: [deleted.key]))
    }

    @Test func tracksLimboDocuments() {
        let doc1 = F.doc("docs/1", 1)
        let doc2 = F.doc("docs/2", 1)
        let doc3 = F.doc("docs/3", 1)
        let event = makeAggregator(
            [F.queryTarget(1), F.limboTarget(2)],
            [docChange([1, 2], [], doc1), docChange([2], [], doc2), docChange([1], [], doc3), targetChange(.current, [1, 2])]
        ).createRemoteEvent(at: F.version(3))

        #expect(!event.resolvedLimboDocuments.contains(doc1.key), "also in a query target")
        #expect(event.resolvedLimboDocuments.contains(doc2.key))
        #expect(!event.resolvedLimboDocuments.contains(doc3.key))
        #expect(event.resolvedLimboDocuments.contains(F.key("coll/limbo")), "the synthesized delete")
    }

    @Test func eventStartsCollectingAfresh() {
        let aggregator = makeAggregator(queries(1), [docChange([1], [], F.doc("docs/1", 1)), .existenceFilter(targetID: 1, count: 5)])
        let first = aggregator.createRemoteEvent(at: F.version(3))
        #expect(!first.documentUpdates.isEmpty && !first.targetMismatches.isEmpty)

        let second = aggregator.createRemoteEvent(at: F.version(4))
        #expect(second.documentUpdates.isEmpty)
        #expect(second.targetMismatches.isEmpty)
        #expect(second.resolvedLimboDocuments.isEmpty)
        #expect(second.targetChanges.isEmpty)
    }
}
