import DocTestSupport
import DocTestTraits
import Testing
@testable import DocCache
import DocModel

@Suite("EventManager", .cpuBound)
struct EventManagerTests {
    typealias F = ViewFixtures
    typealias Call = RecordingEventSource.Call

    let rooms = F.query("rooms")
    let users = F.query("users")

    /// A first snapshot of `query` holding `documents` (from cache).
    func snapshot(_ query: Query, _ documents: [Document]) -> ViewSnapshot {
        F.apply(View(query: query, remoteDocuments: []), documents)!
    }

    @Test func listenersOfOneQueryShareOneListen() throws {
        let source = RecordingEventSource()
        let manager = EventManager(source: source)
        let a = EventRecorder()
        let b = EventRecorder()
        let listenerA = QueryListener(query: rooms, callback: a.callback)
        // An equal query built separately shares the listen.
        let listenerB = QueryListener(query: try Query(collection: "rooms").order(by: FieldPath.documentID), callback: b.callback)

        let targetA = try manager.addQueryListener(listenerA)
        let targetB = try manager.addQueryListener(listenerB)
        #expect(source.calls == [.listen("rooms", remote: true)])
        #expect(targetA == targetB)
        #expect(manager.listeners(for: rooms).count == 2)

        let snap = snapshot(rooms, [F.doc("rooms/a", 1)])
        manager.onViewSnapshots([snap])
        #expect(a.snapshots.count == 1 && b.snapshots.count == 1)

        manager.removeQueryListener(listenerA)
        #expect(source.calls == [.listen("rooms", remote: true)])
        manager.removeQueryListener(listenerB)
        #expect(source.calls == [.listen("rooms", remote: true), .stop("rooms", remote: true)])
        #expect(!manager.hasListeners(for: rooms))
    }

    @Test func cacheOnlyListenersListenLocally() throws {
        let source = RecordingEventSource()
        let manager = EventManager(source: source)
        let options = ListenOptions(source: .cache)
        let one = QueryListener(query: rooms, options: options, callback: { _ in })
        let two = QueryListener(query: rooms, options: options, callback: { _ in })
        try manager.addQueryListener(one)
        try manager.addQueryListener(two)
        manager.removeQueryListener(one)
        manager.removeQueryListener(two)
        #expect(source.calls == [.listen("rooms", remote: false), .stop("rooms", remote: false)])
    }

    @Test func aDefaultListenerJoiningCacheListenersStartsAndStopsTheRemoteListen() throws {
        let source = RecordingEventSource()
        let manager = EventManager(source: source)
        let cache = QueryListener(query: rooms, options: ListenOptions(source: .cache), callback: { _ in })
        let remote = QueryListener(query: rooms, callback: { _ in })
        let remote2 = QueryListener(query: rooms, callback: { _ in })
        try manager.addQueryListener(cache)
        try manager.addQueryListener(remote)
        try manager.addQueryListener(remote2)
        #expect(source.calls == [.listen("rooms", remote: false), .listenRemote("rooms")])
        manager.removeQueryListener(remote)
        #expect(source.calls.count == 2)  // remote2 still needs the server
        manager.removeQueryListener(remote2)
        #expect(source.calls.last == .stopRemote("rooms"))
        manager.removeQueryListener(cache)
        #expect(source.calls == [
            .listen("rooms", remote: false), .listenRemote("rooms"), .stopRemote("rooms"), .stop("rooms", remote: false),
        ])
    }

    @Test func aCacheListenerJoiningADefaultOneChangesNothingOnTheServer() throws {
        let source = RecordingEventSource()
        let manager = EventManager(source: source)
        let remote = QueryListener(query: rooms, callback: { _ in })
        let cache = QueryListener(query: rooms, options: ListenOptions(source: .cache), callback: { _ in })
        try manager.addQueryListener(remote)
        try manager.addQueryListener(cache)
        #expect(source.calls == [.listen("rooms", remote: true)])
        manager.removeQueryListener(remote)
        #expect(source.calls == [.listen("rooms", remote: true), .stopRemote("rooms")])
        manager.removeQueryListener(cache)
        #expect(source.calls.last == .stop("rooms", remote: false))
    }

    @Test func removingAnUnknownListenerIsANoOp() throws {
        let source = RecordingEventSource()
        let manager = EventManager(source: source)
        let known = QueryListener(query: rooms, callback: { _ in })
        let stranger = QueryListener(query: rooms, callback: { _ in })
        let elsewhere = QueryListener(query: users, callback: { _ in })
        manager.removeQueryListener(elsewhere)
        try manager.addQueryListener(known)
        manager.removeQueryListener(stranger)
        manager.removeQueryListener(elsewhere)
        #expect(source.calls == [.listen("rooms", remote: true)])
        #expect(manager.listeners(for: rooms).count == 1)
    }

    @Test func notifiesListenersInSnapshotThenRegistrationOrder() throws {
        let manager = EventManager(source: RecordingEventSource())
        var order: [String] = []
        let first = QueryListener(query: rooms, callback: { _ in order.append("rooms#1") })
        let second = QueryListener(query: users, callback: { _ in order.append("users") })
        let third = QueryListener(query: rooms, callback: { _ in order.append("rooms#2") })
        for listener in [first, second, third] { try manager.addQueryListener(listener) }
        manager.onViewSnapshots([snapshot(rooms, [F.doc("rooms/a", 1)]), snapshot(users, [F.doc("users/u", 1)])])
        #expect(order == ["rooms#1", "rooms#2", "users"])
        #expect(manager.listenedQueries == [rooms, users])
    }

    @Test func forwardsOnlineStateChanges() throws {
        let manager = EventManager(source: RecordingEventSource())
        let recorder = EventRecorder()
        let listener = QueryListener(query: rooms, callback: recorder.callback)
        try manager.addQueryListener(listener)
        #expect(listener.onlineState == .unknown)
        manager.onOnlineStateChange(.online)
        #expect(listener.onlineState == .online)
        #expect(manager.onlineState == .online)

        // A later listener starts from the manager's current state.
        let late = QueryListener(query: users, callback: { _ in })
        try manager.addQueryListener(late)
        #expect(late.onlineState == .online)

        // An empty, unsynced first snapshot is held back until the client goes offline.
        manager.onViewSnapshots([snapshot(rooms, [])])
        #expect(recorder.snapshots.isEmpty)
        manager.onOnlineStateChange(.offline)
        #expect(recorder.snapshots.count == 1)
        #expect(recorder.snapshots.first?.isFromCache == true)
    }

    @Test func aLateListenerGetsTheLastSnapshotAtOnce() throws {
        let manager = EventManager(source: RecordingEventSource())
        try manager.addQueryListener(QueryListener(query: rooms, callback: { _ in }))
        let doc = F.doc("rooms/a", 1)
        manager.onViewSnapshots([snapshot(rooms, [doc])])

        let recorder = EventRecorder()
        try manager.addQueryListener(QueryListener(query: rooms, callback: recorder.callback))
        #expect(recorder.snapshots.count == 1)
        #expect(recorder.snapshots.first?.documentChanges == [DocumentViewChange(.added, doc)])
    }

    @Test func theFirstSnapshotReportedDuringListenReachesTheNewListener() throws {
        let source = RecordingEventSource()
        let manager = EventManager(source: source)
        let doc = F.doc("rooms/a", 1)
        source.onListen = { [unowned manager] query in
            manager.onViewSnapshots([F.apply(View(query: query, remoteDocuments: []), [doc])!])
        }
        let recorder = EventRecorder()
        try manager.addQueryListener(QueryListener(query: rooms, callback: recorder.callback))
        #expect(recorder.snapshots.map { Array($0.documents) } == [[doc]])
    }

    @Test func errorsFanOutAndDropTheQuery() throws {
        let source = RecordingEventSource()
        let manager = EventManager(source: source)
        let a = EventRecorder()
        let b = EventRecorder()
        let other = EventRecorder()
        let listenerA = QueryListener(query: rooms, callback: a.callback)
        try manager.addQueryListener(listenerA)
        try manager.addQueryListener(QueryListener(query: rooms, callback: b.callback))
        try manager.addQueryListener(QueryListener(query: users, callback: other.callback))

        let error = DocError(.permissionDenied, "rules deny the query")
        manager.onError(rooms, error)
        #expect(a.errors == [error] && b.errors == [error])
        #expect(other.errors.isEmpty)
        #expect(!manager.hasListeners(for: rooms))
        #expect(manager.hasListeners(for: users))

        // The sync engine already dropped the query: removing a listener later stops nothing,
        // and later snapshots of the query reach no one.
        manager.removeQueryListener(listenerA)
        manager.onViewSnapshots([snapshot(rooms, [F.doc("rooms/a", 1)])])
        #expect(a.snapshots.isEmpty)
        #expect(!source.calls.contains(.stop("rooms", remote: true)))
        // An error for an unknown query is ignored.
        manager.onError(F.query("nowhere"), error)
    }

    @Test func aFailedListenIsRolledBackAndThrown() throws {
        let source = RecordingEventSource()
        let manager = EventManager(source: source)
        source.failNextListen = DocError(.internal, "disk full")
        let listener = QueryListener(query: rooms, callback: { _ in })
        #expect(throws: DocError(.internal, "disk full")) { try manager.addQueryListener(listener) }
        #expect(!manager.hasListeners(for: rooms))
        // The next attempt listens again.
        try manager.addQueryListener(listener)
        #expect(source.calls == [.listen("rooms", remote: true)])

        // A failed remote listen for a default listener joining cache ones keeps the others.
        let cache = QueryListener(query: users, options: ListenOptions(source: .cache), callback: { _ in })
        try manager.addQueryListener(cache)
        source.failNextListen = DocError(.internal, "disk full")
        let remote = QueryListener(query: users, callback: { _ in })
        #expect(throws: DocError.self) { try manager.addQueryListener(remote) }
        #expect(manager.listeners(for: users).map(ObjectIdentifier.init) == [ObjectIdentifier(cache)])
    }

    @Test func aListenerRemovedByAnotherListenersCallbackGetsNoMoreEvents() throws {
        let manager = EventManager(source: RecordingEventSource())
        let victim = EventRecorder()
        let victimListener = QueryListener(query: rooms, callback: victim.callback)
        let remover = QueryListener(query: rooms, callback: { [unowned manager] _ in
            manager.removeQueryListener(victimListener)
        })
        try manager.addQueryListener(remover)
        try manager.addQueryListener(victimListener)
        manager.onViewSnapshots([snapshot(rooms, [F.doc("rooms/a", 1)])])
        #expect(victim.snapshots.isEmpty)
        #expect(manager.listeners(for: rooms).count == 1)
    }

    @Test func snapshotsInSyncEventsFollowRaisedEvents() throws {
        let manager = EventManager(source: RecordingEventSource())
        var inSync = 0
        let id = manager.addSnapshotsInSyncListener { inSync += 1 }
        #expect(inSync == 1)  // raised once when added

        let recorder = EventRecorder()
        try manager.addQueryListener(QueryListener(query: rooms, callback: recorder.callback))
        #expect(inSync == 1)

        // A held-back first snapshot raises nothing.
        manager.onViewSnapshots([snapshot(rooms, [])])
        #expect(recorder.snapshots.isEmpty && inSync == 1)

        // Going offline raises the held-back event: one in-sync event.
        manager.onOnlineStateChange(.offline)
        #expect(recorder.snapshots.count == 1 && inSync == 2)

        // A batch raising events for two queries: one in-sync event.
        try manager.addQueryListener(QueryListener(query: users, callback: { _ in }))
        let roomsView = View(query: rooms, remoteDocuments: [])
        F.apply(roomsView, [])
        let roomsSnap = try #require(F.apply(roomsView, [F.doc("rooms/a", 1)]))
        manager.onViewSnapshots([roomsSnap, snapshot(users, [F.doc("users/u", 1)])])
        #expect(inSync == 3)

        // A listener joining with a snapshot to show raises one.
        try manager.addQueryListener(QueryListener(query: users, callback: { _ in }))
        #expect(inSync == 4)

        // No events, no in-sync event.
        manager.onOnlineStateChange(.online)
        manager.onViewSnapshots([])
        #expect(inSync == 4)

        manager.removeSnapshotsInSyncListener(id)
        manager.onViewSnapshots([snapshot(users, [F.doc("users/v", 1)])])
        #expect(inSync == 4)
    }
}
