import DocModel
import DocProtocol
import DocRules
import Testing
@testable import DocServer

/// Rules enforcement on request/response reads and on listen targets.
@Suite struct RulesReadTests {
    func listen(_ server: TestServer, _ connection: ServerConnection, _ id: Int32, _ target: Target) async -> [ServerMessage] {
        let delivered = await server.core.watch(.init(targetID: id, target: target), on: connection)
        #expect(connection.outbound.drain() == delivered)
        return delivered
    }

    static func document(_ path: String) -> Target { T.target(DocModel.Query(document: T.key(path))) }

    static func notes(owner: String?, limit: Int = 10) -> Target {
        var q = try! DocModel.Query(collection: "notes")
        if let owner { q = try! q.filter("owner", .equal, .string(owner)) }
        return try! q.limit(to: limit).toTarget()
    }

    static func refusal(_ messages: [ServerMessage]) -> DocError? {
        guard messages.count == 1, let change = messages[0].targetChange, change.state == .removed else { return nil }
        return change.cause
    }

    @Test func getIsDecidedPerDocument() async throws {
        let server = try rulesServer()
        try await server.seed(["notes/ann": ["owner": "ann"], "notes/bob": ["owner": "bob"]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        #expect(try await server.core.documents([T.key("notes/ann"), T.key("notes/none")], on: ann).map(\.key) == [T.key("notes/ann")])
        let error = await #expect(throws: DocError.self) {
            try await server.core.documents([T.key("notes/ann"), T.key("notes/bob")], on: ann)
        }
        #expect(error?.code == .permissionDenied && error?.location == "notes/bob")
        #expect(error?.message.contains("get on /databases/(default)/documents/notes/bob") == true)
    }

    @Test func getRulesMayReadOtherDocuments() async throws {
        let server = try rulesServer()
        try await server.seed(["rooms/r1": ["name": "Lobby"], "members/ann": [:]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        let bob = try await server.connect(uid: "bob", claims: [:])
        #expect(try await server.core.documents([T.key("rooms/r1")], on: ann).count == 1)
        await #expect(throws: DocError.self) { try await server.core.documents([T.key("rooms/r1")], on: bob) }
        #expect(await listen(server, ann, 1, Self.document("rooms/r1")).count == 4)
        #expect(Self.refusal(await listen(server, bob, 1, Self.document("rooms/r1")))?.code == .permissionDenied)
    }

    @Test func listIsDecidedFromTheQuery() async throws {
        let server = try rulesServer()
        try await server.seed(["notes/a1": ["owner": "ann"], "notes/a2": ["owner": "ann"]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        #expect(try await server.core.query(Self.notes(owner: "ann"), on: ann).documents.count == 2)
        // Every stored note is ann's, yet a query that could return others' notes is refused.
        let error = await #expect(throws: DocError.self) { try await server.core.query(Self.notes(owner: nil), on: ann) }
        #expect(error?.code == .permissionDenied && error?.location == "target notes")
        #expect(error?.message.contains("list on /databases/(default)/documents/notes") == true)
        #expect(error?.message.contains("rules are not filters") == true)
        await #expect(throws: DocError.self) { try await server.core.query(Self.notes(owner: "bob"), on: ann) }
    }

    /// A collection group's path names only where the group is searched (the root here: an
    /// empty path), so a refusal names the group.
    @Test func aRefusedCollectionGroupIsNamedInTheLocation() async throws {
        let server = try rulesServer()
        let ann = try await server.connect(uid: "ann", claims: [:])
        let group = try DocModel.Query(collectionGroup: "comments").limit(to: 10).toTarget()
        let error = await #expect(throws: DocError.self) { try await server.core.query(group, on: ann) }
        #expect(error?.code == .permissionDenied)
        #expect(error?.location == "target collection group comments")
        let unbounded = try DocModel.Query(collectionGroup: "comments").toTarget()
        #expect(Self.refusal(await listen(server, ann, 2, unbounded))?.location == "target collection group comments")
    }

    @Test func watchTargetsAreCheckedWhenAdded() async throws {
        let server = try rulesServer()
        try await server.seed(["notes/ann": ["owner": "ann"], "notes/bob": ["owner": "bob"]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        // Document targets: `get`.
        let own = await listen(server, ann, 1, Self.document("notes/ann"))
        #expect(own.first?.targetChange?.state == .added && own.count == 4)
        let other = try #require(Self.refusal(await listen(server, ann, 3, Self.document("notes/bob"))))
        #expect(other.code == .permissionDenied && other.location == "target notes/bob")
        // Query targets: `list`, for every document the query could return.
        let mine = await listen(server, ann, 2, Self.notes(owner: "ann"))
        #expect(mine.compactMap(\.documentChange).map(\.document.key) == [T.key("notes/ann")])
        let all = try #require(Self.refusal(await listen(server, ann, 4, Self.notes(owner: nil))))
        #expect(all.code == .permissionDenied && all.message.contains("list on /databases/(default)/documents/notes"))
        // The refused targets are not listened to: a change to bob's note reaches nobody.
        let bob = try await server.connect(uid: "bob", claims: [:])
        #expect(await server.write(bob, batch: 1, [.update(T.key("notes/bob"), fields: [T.field("x"): 1])]).writeResult != nil)
        #expect(ann.outbound.drain().isEmpty)
        #expect(await server.core.health().targets == 2)
    }

    @Test func aTargetAllowedOnlyPartlyIsRefusedAsAWhole() async throws {
        let server = try rulesServer()
        let ann = try await server.connect(uid: "ann", claims: [:])
        // `owner in [ann, bob]`: the rules allow ann's half only; no document exists at all.
        let q = try DocModel.Query(collection: "notes").filter("owner", .in, ["ann", "bob"]).limit(to: 5)
        let refused = try #require(Self.refusal(await listen(server, ann, 2, try q.toTarget())))
        #expect(refused.code == .permissionDenied)
        let only = try DocModel.Query(collection: "notes").filter("owner", .in, ["ann"]).limit(to: 5)
        #expect(await listen(server, ann, 4, try only.toTarget()).first?.targetChange?.state == .added)
    }

    @Test func aDocumentTargetWhoseDocumentBecomesDeniedIsRemoved() async throws {
        let server = try rulesServer()
        try await server.seed(["notes/n1": ["owner": "ann", "text": "a"], "public/p": ["n": 1]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        let writer = try await server.connect(uid: "ann", claims: [:], client: "ann-2")
        _ = await listen(server, ann, 1, Self.document("notes/n1"))
        _ = await listen(server, ann, 3, Self.document("public/p"))
        // An allowed change arrives as usual.
        #expect(await server.write(writer, batch: 1, [.update(T.key("notes/n1"), fields: [T.field("text"): "b"])]).writeResult != nil)
        let allowed = ann.outbound.drain()
        #expect(allowed.first?.documentChange?.document.data[T.field("text")] == "b")
        // Ann gives the note to bob (her update rule allows it only for her own notes; here the
        // admin does it past the rules): ann may no longer read it.
        try await server.seed(["notes/n1": ["owner": "bob", "text": "secret"]])
        // The seed bypassed the hub: have a later commit of the same document reach the hub.
        let bob = try await server.connect(uid: "bob", claims: [:])
        #expect(await server.write(bob, batch: 1, [.update(T.key("notes/n1"), fields: [T.field("text"): "secret 2"])]).writeResult != nil)
        let messages = ann.outbound.drain()
        #expect(!messages.contains { $0.documentChange != nil }, "the new state must not reach ann: \(messages)")
        let removed = try #require(messages.compactMap(\.targetChange).first { $0.state == .removed })
        #expect(removed.targetIDs == [1] && removed.cause?.code == .permissionDenied)
        #expect(removed.cause?.location == "target notes/n1")
        #expect(messages.last?.targetChange?.isGlobalSnapshot == true)
        // The target is gone; the connection's other target still listens.
        #expect(await server.write(bob, batch: 2, [.update(T.key("notes/n1"), fields: [T.field("text"): "3"])]).writeResult != nil)
        #expect(ann.outbound.drain().isEmpty)
        #expect(await server.write(writer, batch: 2, [T.set("public/p", ["n": 2])]).writeResult != nil)
        #expect(ann.outbound.drain().first?.documentChange?.targetIDs == [3])
    }

    @Test func aDocumentTargetIsRemovedWhenItsOwnerHandsItOver() async throws {
        let server = try rulesServer(enforcementRules.replacingOccurrences(
            of: "&& request.resource.data.owner == resource.data.owner;", with: ";"))
        try await server.seed(["notes/n1": ["owner": "ann"]])
        let ann = try await server.connect(uid: "ann", claims: [:])
        // Watchers with the same claims (decided once per commit) and with other claims.
        var watchers: [ServerConnection] = []
        for (client, claims) in [("ann-2", [:]), ("ann-3", [:]), ("ann-4", ["team": "x"])] as [(String, [String: Value])] {
            let watcher = try await server.connect(uid: "ann", claims: claims, client: client)
            _ = await listen(server, watcher, 1, Self.document("notes/n1"))
            watchers.append(watcher)
        }
        let bystander = try await server.connect(uid: "bob", claims: [:], client: "bob-1")
        _ = await listen(server, bystander, 2, Self.document("public/none"))
        #expect(await server.write(ann, batch: 1, [.update(T.key("notes/n1"), fields: [T.field("owner"): "bob"])]).writeResult != nil)
        for watcher in watchers {
            let messages = watcher.outbound.drain()
            #expect(messages.count == 2)
            #expect(messages.first?.targetChange?.state == .removed && messages.first?.targetChange?.cause?.code == .permissionDenied)
        }
        #expect(bystander.outbound.drain().isEmpty)
        #expect(await server.core.health().targets == 1)
    }
}
