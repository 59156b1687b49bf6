import DocTestSupport
import DocTestTraits
import Testing
@testable import DocCache
import DocModel

@Suite("QueryListener", .cpuBound)
struct QueryListenerTests {
    typealias F = ViewFixtures

    let rooms = F.query("rooms")
    let eros = F.doc("rooms/Eros", 1, ["name": "Eros"])
    let hades = F.doc("rooms/Hades", 2, ["name": "Hades"])

    static let withMetadata = ListenOptions(includeMetadataChanges: true)

    @Test func raisesTheFirstEventAsAllAddedThenLaterChanges() throws {
        let plain = EventRecorder()
        let full = EventRecorder()
        let plainListener = QueryListener(query: rooms, callback: plain.callback)
        let fullListener = QueryListener(query: rooms, options: Self.withMetadata, callback: full.callback)

        let view = View(query: rooms, remoteDocuments: [])
        let snap1 = try #require(F.apply(view, [eros, hades]))
        let hadesPrime = F.doc("rooms/Hades", 3, ["name": "Hades'"])
        let snap2 = try #require(F.apply(view, [hadesPrime]))

        for listener in [plainListener, fullListener] {
            #expect(listener.onViewSnapshot(snap1))
            #expect(listener.onViewSnapshot(snap2))
        }
        #expect(plain.snapshots == [snap1.excludingMetadataChanges(), snap2.excludingMetadataChanges()])
        #expect(full.snapshots == [snap1, snap2])
        #expect(plain.snapshots[0].documentChanges == [DocumentViewChange(.added, eros), DocumentViewChange(.added, hades)])
        #expect(plain.snapshots[1].documentChanges == [DocumentViewChange(.modified, hadesPrime)])
        #expect(Array(plain.snapshots[1].oldDocuments) == [eros, hades])
    }

    @Test func deliversErrors() {
        let recorder = EventRecorder()
        let listener = QueryListener(query: rooms, callback: recorder.callback)
        let error = DocError(.permissionDenied, "no")
        listener.onError(error)
        #expect(recorder.errors == [error])
        #expect(recorder.snapshots.isEmpty)
    }

    @Test func raisesAnEmptyFirstEventOnlyOnceSynced() throws {
        let recorder = EventRecorder()
        let listener = QueryListener(query: rooms, callback: recorder.callback)
        let view = View(query: rooms, remoteDocuments: [])
        let snap1 = try #require(F.apply(view, []))
        let snap2 = try #require(F.apply(view, [], F.markCurrent()))
        #expect(!listener.onViewSnapshot(snap1))  // empty and from cache: held back
        #expect(listener.onViewSnapshot(snap2))
        #expect(recorder.snapshots.count == 1)
        let event = try #require(recorder.snapshots.first)
        #expect(event.documents.isEmpty && !event.isFromCache && event.syncStateChanged)
    }

    @Test func raisesAnEmptyFromCacheFirstEventWhenResultsWereCachedBefore() throws {
        let recorder = EventRecorder()
        let listener = QueryListener(query: rooms, callback: recorder.callback)
        let view = View(query: rooms, remoteDocuments: [])
        // A resume token without `current`: the target was synced before, the results are
        // the cached ones.
        let snapshot = try #require(F.apply(view, [], TargetChange(resumeToken: [1], current: false)))
        #expect(snapshot.isFromCache && snapshot.hasCachedResults)
        #expect(listener.onViewSnapshot(snapshot))
        #expect(recorder.snapshots.first?.hasCachedResults == true)
    }

    @Test func cacheOnlyListenersRaiseTheFirstEventAtOnce() throws {
        let recorder = EventRecorder()
        let listener = QueryListener(
            query: rooms, options: ListenOptions(waitForSyncWhenOnline: true, source: .cache), callback: recorder.callback)
        #expect(!listener.listensToRemoteStore)
        let view = View(query: rooms, remoteDocuments: [])
        let snapshot = try #require(F.apply(view, []))
        #expect(listener.onOnlineStateChanged(.online) == false)
        #expect(listener.onViewSnapshot(snapshot))
        #expect(recorder.snapshots.count == 1 && recorder.snapshots[0].isFromCache)
    }

    @Test func stripsMetadataOnlyChangesUnlessAskedFor() throws {
        let plain = EventRecorder()
        let full = EventRecorder()
        let plainListener = QueryListener(query: rooms, callback: plain.callback)
        let fullListener = QueryListener(query: rooms, options: Self.withMetadata, callback: full.callback)

        let view = View(query: rooms, remoteDocuments: [])
        let snap1 = try #require(F.apply(view, [eros]))
        let snap2 = try #require(F.apply(view, [], F.ackTarget(eros)))  // sync state only
        let snap3 = try #require(F.apply(view, [hades]))

        #expect(plainListener.onViewSnapshot(snap1))
        #expect(!plainListener.onViewSnapshot(snap2))
        #expect(plainListener.onViewSnapshot(snap3))
        #expect(fullListener.onViewSnapshot(snap1))
        #expect(fullListener.onViewSnapshot(snap2))
        #expect(fullListener.onViewSnapshot(snap3))

        #expect(plain.snapshots == [snap1.excludingMetadataChanges(), snap3.excludingMetadataChanges()])
        #expect(full.snapshots == [snap1, snap2, snap3])
    }

    @Test func raisesDocumentMetadataChangesOnlyWhenAskedFor() throws {
        let erosLocal = F.doc("rooms/Eros", 1, ["name": "Eros"], local: true)
        let other = F.doc("rooms/Other", 3, ["name": "Other"])
        let plain = EventRecorder()
        let documentsOnly = EventRecorder()
        let plainListener = QueryListener(query: rooms, callback: plain.callback)
        let metadataListener = QueryListener(
            query: rooms, options: ListenOptions(includeDocumentMetadataChanges: true), callback: documentsOnly.callback)

        let view = View(query: rooms, remoteDocuments: [])
        let snap1 = try #require(F.apply(view, [erosLocal, hades]))
        let snap2 = try #require(F.apply(view, [eros]))  // Eros's write acknowledged
        let snap3 = try #require(F.apply(view, [other]))
        for snapshot in [snap1, snap2, snap3] {
            plainListener.onViewSnapshot(snapshot)
            metadataListener.onViewSnapshot(snapshot)
        }
        #expect(plain.snapshots.map(\.documentChanges) == [
            [DocumentViewChange(.added, erosLocal), DocumentViewChange(.added, hades)],
            [DocumentViewChange(.added, other)],
        ])
        #expect(documentsOnly.snapshots.map(\.documentChanges) == [
            [DocumentViewChange(.added, erosLocal), DocumentViewChange(.added, hades)],
            [DocumentViewChange(.metadata, eros)],
            [DocumentViewChange(.added, other)],
        ])
        #expect(documentsOnly.snapshots.allSatisfy { !$0.excludesMetadataChanges })
        #expect(plain.snapshots.allSatisfy { $0.excludesMetadataChanges })
    }

    @Test func raisesQueryMetadataEventsWhenPendingWritesOfTheQueryChange() throws {
        let erosLocal = F.doc("rooms/Eros", 1, ["name": "Eros"], local: true)
        let hadesLocal = F.doc("rooms/Hades", 2, ["name": "Hades"], local: true)
        let other = F.doc("rooms/Other", 3, ["name": "Other"])
        let recorder = EventRecorder()
        let listener = QueryListener(
            query: rooms, options: ListenOptions(includeQueryMetadataChanges: true), callback: recorder.callback)

        let view = View(query: rooms, remoteDocuments: [])
        let snap1 = try #require(F.apply(view, [erosLocal, hadesLocal]))
        let snap2 = try #require(F.apply(view, [eros]))  // Hades still pending: no event
        let snap3 = try #require(F.apply(view, [other]))
        let snap4 = try #require(F.apply(view, [hades]))  // nothing pending any more: event

        #expect(listener.onViewSnapshot(snap1))
        #expect(!listener.onViewSnapshot(snap2))
        #expect(listener.onViewSnapshot(snap3))
        #expect(listener.onViewSnapshot(snap4))

        let expected4 = ViewSnapshot(
            query: rooms, documents: snap4.documents, oldDocuments: snap3.documents, documentChanges: [],
            mutatedKeys: [], isFromCache: true, syncStateChanged: false, excludesMetadataChanges: true)
        #expect(recorder.snapshots == [snap1.excludingMetadataChanges(), snap3.excludingMetadataChanges(), expected4])
    }

    @Test func metadataOnlyDocumentChangesAreDroppedFromMixedSnapshots() throws {
        let erosLocal = F.doc("rooms/Eros", 1, ["name": "Eros"], local: true)
        let other = F.doc("rooms/Other", 3, ["name": "Other"])
        let recorder = EventRecorder()
        let listener = QueryListener(query: rooms, callback: recorder.callback)
        let view = View(query: rooms, remoteDocuments: [])
        let snap1 = try #require(F.apply(view, [erosLocal, hades]))
        let snap2 = try #require(F.apply(view, [eros, other]))
        #expect(snap2.documentChanges.count == 2)
        listener.onViewSnapshot(snap1)
        listener.onViewSnapshot(snap2)
        #expect(recorder.snapshots.count == 2)
        #expect(recorder.snapshots[1].documentChanges == [DocumentViewChange(.added, other)])
        #expect(recorder.snapshots[1].excludesMetadataChanges)
        #expect(Array(recorder.snapshots[1].oldDocuments) == Array(snap1.documents))
    }

    @Test func waitsForSyncWhileOnline() throws {
        let recorder = EventRecorder()
        let listener = QueryListener(
            query: rooms, options: ListenOptions(waitForSyncWhenOnline: true), callback: recorder.callback)
        let view = View(query: rooms, remoteDocuments: [])
        let snap1 = try #require(F.apply(view, [eros]))
        let snap2 = try #require(F.apply(view, [hades]))
        let snap3 = try #require(F.apply(view, [], F.ackTarget(eros, hades)))

        #expect(!listener.onOnlineStateChanged(.online))
        #expect(!listener.onViewSnapshot(snap1))
        #expect(!listener.onOnlineStateChanged(.unknown))
        #expect(!listener.onOnlineStateChanged(.online))
        #expect(!listener.onViewSnapshot(snap2))
        #expect(listener.onViewSnapshot(snap3))

        let expected = ViewSnapshot(
            query: rooms, documents: snap3.documents, oldDocuments: DocumentSet(query: rooms),
            documentChanges: [DocumentViewChange(.added, eros), DocumentViewChange(.added, hades)], mutatedKeys: [],
            isFromCache: false, syncStateChanged: true, excludesMetadataChanges: true,
            hasCachedResults: snap3.hasCachedResults)
        #expect(recorder.snapshots == [expected])
    }

    @Test func raisesTheHeldBackFirstEventWhenGoingOffline() throws {
        let recorder = EventRecorder()
        let listener = QueryListener(
            query: rooms, options: ListenOptions(waitForSyncWhenOnline: true), callback: recorder.callback)
        let view = View(query: rooms, remoteDocuments: [])
        let snap1 = try #require(F.apply(view, [eros]))
        let snap2 = try #require(F.apply(view, [hades]))

        #expect(!listener.onOnlineStateChanged(.online))
        #expect(!listener.onViewSnapshot(snap1))
        #expect(listener.onOnlineStateChanged(.offline))
        #expect(!listener.onOnlineStateChanged(.unknown))
        #expect(!listener.onOnlineStateChanged(.offline))
        #expect(listener.onViewSnapshot(snap2))

        #expect(recorder.snapshots == [
            ViewSnapshot(
                query: rooms, documents: snap1.documents, oldDocuments: DocumentSet(query: rooms),
                documentChanges: [DocumentViewChange(.added, eros)], mutatedKeys: [], isFromCache: true,
                syncStateChanged: true, excludesMetadataChanges: true),
            ViewSnapshot(
                query: rooms, documents: snap2.documents, oldDocuments: snap1.documents,
                documentChanges: [DocumentViewChange(.added, hades)], mutatedKeys: [], isFromCache: true,
                syncStateChanged: false, excludesMetadataChanges: true),
        ])
    }

    @Test func raisesAnEmptyFirstEventWhenGoingOrStartingOffline() throws {
        let view = View(query: rooms, remoteDocuments: [])
        let empty = try #require(F.apply(view, []))
        let expected = ViewSnapshot(
            query: rooms, documents: DocumentSet(query: rooms), oldDocuments: DocumentSet(query: rooms),
            documentChanges: [], mutatedKeys: [], isFromCache: true, syncStateChanged: true,
            excludesMetadataChanges: true)

        let going = EventRecorder()
        let goingListener = QueryListener(query: rooms, callback: going.callback)
        #expect(!goingListener.onOnlineStateChanged(.online))
        #expect(!goingListener.onViewSnapshot(empty))
        #expect(goingListener.onOnlineStateChanged(.offline))
        #expect(going.snapshots == [expected])

        let starting = EventRecorder()
        let startingListener = QueryListener(query: rooms, callback: starting.callback)
        #expect(!startingListener.onOnlineStateChanged(.offline))
        #expect(startingListener.onViewSnapshot(empty))
        #expect(starting.snapshots == [expected])
    }

    @Test func doesNotWaitForSyncByDefaultWhenThereAreDocuments() throws {
        let recorder = EventRecorder()
        let listener = QueryListener(query: rooms, callback: recorder.callback)
        let view = View(query: rooms, remoteDocuments: [])
        let snapshot = try #require(F.apply(view, [eros]))
        #expect(!listener.onOnlineStateChanged(.online))
        #expect(listener.onViewSnapshot(snapshot))
        #expect(recorder.snapshots.first?.isFromCache == true)
        #expect(listener.raisedInitialEvent)
    }
}
