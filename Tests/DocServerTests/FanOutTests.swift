import DocModel
import DocProtocol
import NIOCore
import Testing
@testable import DocServer

/// A commit's fan-out as connections receive it: frames shared by the connections that get the
/// same change, frames of their own where target ids differ, windows worked out once per
/// distinct target, and the outbox's cut-off for a client that does not read.
@Suite struct FanOutTests {
    static let hot = T.target(DocModel.Query(document: T.key("rooms/hot")))

    func listen(_ server: TestServer, _ connection: ServerConnection, _ targets: [(Int32, Target)]) async {
        for (id, target) in targets {
            _ = await server.core.watch(.init(targetID: id, target: target), on: connection)
        }
        _ = connection.outbound.drain()
    }

    /// Whether two frames' bytes are one encoding (the same memory; both buffers are held while
    /// comparing, so a freed one's address cannot come back as the other's).
    func sameStorage(_ x: OutboundFrame, _ y: OutboundFrame) -> Bool {
        let (a, b) = (x.encoded, y.encoded)
        return a.withUnsafeReadableBytes { a in b.withUnsafeReadableBytes { b in a.baseAddress == b.baseAddress } }
    }

    @Test func listenersOfOneTargetShareOneEncoding() async throws {
        let server = TestServer()
        let a = try await server.connect(client: "a")
        let b = try await server.connect(client: "b")
        let c = try await server.connect(client: "c")
        await listen(server, a, [(2, Self.hot)])
        await listen(server, b, [(2, Self.hot)])
        await listen(server, c, [(4, Self.hot)])
        let w = try await server.connect(client: "w")
        let result = try #require(await server.write(w, batch: 1, [T.set("rooms/hot", ["seq": 1])]).writeResult)

        let toA = a.outbound.drainFrames()
        let toB = b.outbound.drainFrames()
        let toC = c.outbound.drainFrames()
        #expect(toA.count == 2 && toB.count == 2 && toC.count == 2)
        #expect(toA.map(\.message) == toB.map(\.message))
        for frame in toA + toB + toC {
            #expect(frame.isShared)
            // The bytes read back as the frame's message.
            #expect(try FrameDecoder().decodeServerMessage(Array(frame.encoded.readableBytesView)) == frame.message)
        }
        // a and b: the same change and snapshot, one encoding each.
        #expect(sameStorage(toA[0], toB[0]))
        #expect(sameStorage(toA[1], toB[1]))
        // c's change names its own target: its own frame, its own bytes; the snapshot is everyone's.
        #expect(toA[0].message.documentChange?.targetIDs == [2])
        #expect(toC[0].message.documentChange?.targetIDs == [4])
        #expect(toC[0].message.documentChange?.document == toA[0].message.documentChange?.document)
        #expect(!sameStorage(toC[0], toA[0]))
        #expect(sameStorage(toC[1], toA[1]))
        #expect(toA[1].message.targetChange?.isGlobalSnapshot == true)
        #expect(toA[1].message.targetChange?.snapshotVersion == result.commitVersion)
    }

    @Test func connectionsWithSeveralChangedTargetsGetOneMessageNamingThem() async throws {
        let server = TestServer()
        let rooms = T.collection("rooms", limit: 10)
        let one = try await server.connect(client: "one")
        let both1 = try await server.connect(client: "both-1")
        let both2 = try await server.connect(client: "both-2")
        let otherIDs = try await server.connect(client: "other-ids")
        await listen(server, one, [(2, Self.hot)])
        await listen(server, both1, [(2, Self.hot), (4, rooms)])
        await listen(server, both2, [(2, Self.hot), (4, rooms)])
        await listen(server, otherIDs, [(6, Self.hot), (8, rooms)])
        let w = try await server.connect(client: "w")
        await server.write(w, batch: 1, [T.set("rooms/hot", ["seq": 1])])

        let toOne = one.outbound.drainFrames()
        let toBoth1 = both1.outbound.drainFrames()
        let toBoth2 = both2.outbound.drainFrames()
        let toOther = otherIDs.outbound.drainFrames()
        #expect(toOne.first?.message.documentChange?.targetIDs == [2])
        #expect(toBoth1.first?.message.documentChange?.targetIDs == [2, 4])
        #expect(toOther.first?.message.documentChange?.targetIDs == [6, 8])
        #expect(toBoth1.map(\.message) == toBoth2.map(\.message))
        #expect(zip(toBoth1, toBoth2).allSatisfy { sameStorage($0, $1) })
        for frame in toOne + toBoth1 + toOther {
            #expect(try FrameDecoder().decodeServerMessage(Array(frame.encoded.readableBytesView)) == frame.message)
        }
    }

    @Test func aFullWindowIsReadAgainAndEveryListenerGetsWhatEntered() async throws {
        let server = TestServer()
        let w = try await server.connect(client: "w")
        var batch = 0
        for (id, rank) in [("a", 1), ("b", 2), ("c", 3), ("d", 4)] {
            batch += 1
            await server.write(w, batch: batch, [T.set("s/\(id)", ["rank": .integer(Int64(rank))])])
        }
        let top2 = T.collection("s", limit: 2, orderBy: "rank")
        let listeners = [try await server.connect(client: "l1"), try await server.connect(client: "l2"),
                         try await server.connect(client: "l3")]
        for (i, listener) in listeners.enumerated() { await listen(server, listener, [(i == 2 ? 6 : 2, top2)]) }
        // Deleting a document of the full window: the window is read again; c enters.
        await server.write(w, batch: 10, [.delete(T.key("s/a"))])
        for (i, listener) in listeners.enumerated() {
            let id: Int32 = i == 2 ? 6 : 2
            var mirror = ClientMirror()
            mirror.targets[id] = [T.key("s/a"): Document(key: T.key("s/a"), data: T.data([:]), version: .none),
                                  T.key("s/b"): Document(key: T.key("s/b"), data: T.data([:]), version: .none)]
            let messages = listener.outbound.drain()
            mirror.apply(messages)
            #expect(mirror.targets[id].map { Set($0.keys) } == [T.key("s/b"), T.key("s/c")])
            #expect(messages.last?.targetChange?.isGlobalSnapshot == true)
        }
        // The windows moved on: the next change to c reaches all of them.
        await server.write(w, batch: 11, [T.set("s/c", ["rank": 0])])
        for listener in listeners {
            #expect(listener.outbound.drain().first?.documentChange?.document.key == T.key("s/c"))
        }
    }

    @Test func equalTargetsWithDifferentWindowsAreWorkedOutApart() throws {
        let key = T.key("rooms/hot")
        let old = Document(key: key, data: T.data(["seq": 1]), version: SnapshotVersion(microseconds: 10))
        let new = Document(key: key, data: T.data(["seq": 2]), version: SnapshotVersion(microseconds: 20))
        var plan = FanOutPlan(changes: [key: .document(new)], version: new.version,
                              snapshot: .targetChange(.init(state: .noChange, targetIDs: [], snapshotVersion: new.version)))
        let current = WatchedTarget(id: 2, target: Self.hot, window: [old])
        let alsoCurrent = WatchedTarget(id: 2, target: Self.hot, window: [old])
        let empty = WatchedTarget(id: 2, target: Self.hot, window: [])
        guard case .updated(let first) = plan.step(for: current), case .updated(let second) = plan.step(for: alsoCurrent),
              case .updated(let third) = plan.step(for: empty) else {
            Issue.record("expected updates"); return
        }
        #expect(first == second)
        #expect(third != first)
        #expect(plan.updates[first].entered.map(\.changed) == [true])
        #expect(plan.updates[third].window == [new])
        // Two connections, both with target id 2: the frames of each update are their own.
        var one = FanOutPlan.ChangeSet()
        one.append(.init(targetID: 2, update: first))
        var other = FanOutPlan.ChangeSet()
        other.append(.init(targetID: 2, update: third))
        #expect(plan.frames(for: one).map(\.message) == plan.frames(for: other).map(\.message))
        #expect(plan.frames(for: one).count == 2)
        #expect(!sameStorage(plan.frames(for: one)[0], plan.frames(for: other)[0]))
    }

    @Test func aSlowListenerOfASharedTargetIsCutOff() async throws {
        let server = TestServer(configuration: ServerConfiguration(outboxCapacity: 5))
        let fast = try await server.connect(client: "fast")
        let slow = try await server.connect(client: "slow")
        await listen(server, fast, [(2, Self.hot)])
        await listen(server, slow, [(2, Self.hot)])
        let w = try await server.connect(client: "w")
        for batch in 1...2 {
            await server.write(w, batch: batch, [T.set("rooms/hot", ["seq": .integer(Int64(batch))])])
            #expect(fast.outbound.drain().count == 2)
        }
        #expect(slow.outbound.pendingCount == 4 && !slow.outbound.isFinished)
        // Two more frames do not fit: the slow one is cut off, the fast one carries on.
        await server.write(w, batch: 3, [T.set("rooms/hot", ["seq": 3])])
        #expect(slow.outbound.isFinished)
        let last = slow.outbound.drain()
        #expect(last.count == 1)
        guard case .error(let error)? = last.first else { Issue.record("expected the fatal error"); return }
        #expect(error.fatal && error.error.code == .resourceExhausted)
        let received = fast.outbound.drainFrames()
        #expect(received.first?.message.documentChange?.document.data["seq"] == .integer(3))
        for frame in received {
            #expect(try FrameDecoder().decodeServerMessage(Array(frame.encoded.readableBytesView)) == frame.message)
        }
        await server.write(w, batch: 4, [T.set("rooms/hot", ["seq": 4])])
        #expect(fast.outbound.drain().first?.documentChange?.document.data["seq"] == .integer(4))
        #expect(await slow.outbound.next() == nil)
    }

    @Test func theOutboxKeepsSharedAndOwnFramesInOrder() async throws {
        let outbox = ConnectionOutbox(capacity: 100)
        let shared = OutboundFrame.shared(.existenceFilter(.init(targetID: 1, count: 1)))
        outbox.send([.existenceFilter(.init(targetID: 0, count: 0))])
        outbox.send(frames: [shared, OutboundFrame(.existenceFilter(.init(targetID: 2, count: 2)))])
        outbox.finish(with: .error(.init(DocError(.unavailable, "bye"), fatal: true)))
        var got: [OutboundFrame] = []
        while let frame = await outbox.nextFrame() { got.append(frame) }
        #expect(got.map(\.message.type) == ["existenceFilter", "existenceFilter", "existenceFilter", "error"])
        #expect(got.map(\.isShared) == [false, true, false, false])
        for frame in got {
            #expect(try FrameDecoder().decodeServerMessage(Array(frame.encoded.readableBytesView)) == frame.message)
        }
    }
}
