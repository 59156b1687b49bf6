import DocCache
import DocModel
import DocRules
import DocServer
import DocTestSupport
import Foundation
import Testing

/// DocCache clients against the real server on 127.0.0.1, through the real WebSocket
/// transport: live sync and metadata, the offline queue, restarts, rejections, rules and
/// request documents.
@Suite("Clients over WebSocket", .serialized)
struct ClientSyncTests {
    final class Devices: @unchecked Sendable {
        // Used from one test at a time.
        let root = NSTemporaryDirectory() + "doccache-clients-\(UUID().uuidString)"
        var stores: [DocumentStore] = []
        let server: LiveServer

        init(_ server: LiveServer) { self.server = server }

        func open(_ uid: String, tenant: String = "acme", claims: [String: Value] = [:], device: String? = nil,
                  settings: StoreSettings = StoreSettings(), tokenLifetime: Duration = .seconds(3_600),
                  tokens: Recorder<String>? = nil) async throws -> DocumentStore {
            let server = self.server
            let endpoint = try ServerEndpoint(url: server.url) {
                tokens?.record(.success(""))
                return try await server.token(tenant: tenant, uid: uid, claims: claims, ttl: tokenLifetime)
            }
            let store = try await DocumentStore.open(directory: root + "/" + (device ?? uid), tenant: tenant, user: uid,
                                                     settings: settings, server: endpoint)
            stores.append(store)
            return store
        }

        func close() async {
            for store in stores { await store.close() }
            try? FileManager.default.removeItem(atPath: root)
        }
    }

    @Test func twoClientsSeeEachOthersWritesLiveWithHonestMetadata() async throws {
        let server = try await LiveServer()
        let devices = Devices(server)
        let alice = try await devices.open("alice")
        let bob = try await devices.open("bob")
        let seen = Recorder<QuerySnapshot>()
        let listener = try await bob.collection("files").limit(to: 10).addSnapshotListener(includeMetadataChanges: true) { seen.record($0) }
        // An empty cache while connecting raises no snapshot (as Firestore): the first one is the server's.
        #expect(await eventually { seen.last?.metadata.isFromCache == false })
        #expect(seen.values.allSatisfy { !$0.metadata.isFromCache || $0.isEmpty })
        #expect(await bob.onlineState == .online)

        let mine = Recorder<QuerySnapshot>()
        let aliceListener = try await alice.collection("files").limit(to: 10).addSnapshotListener(includeMetadataChanges: true) { mine.record($0) }
        // A document near the 1 MiB limit: far above WebSocket's default frame size.
        let big = String(repeating: "x", count: 900_000)
        let handle = try await alice.document("files/f1").setData(["body": .value(.string(big))])
        await alice.callbacksDelivered()
        #expect(mine.last?.metadata.hasPendingWrites == true)              // at once, before the server
        let version = try await handle.committed
        #expect(await eventually { mine.last?.metadata.hasPendingWrites == false })
        #expect(await eventually { seen.last?.ids == ["f1"] && seen.last?.metadata.hasPendingWrites == false })
        #expect(seen.last?.documents.first?.get("body") == .string(big))
        #expect(try await bob.document("files/f1").getDocument(source: .server).version == version)

        // A delete is a tombstone: a removed change for listeners, "deleted" for a read.
        _ = try await bob.document("files/f1").delete().committed
        #expect(await eventually { mine.last?.ids == [] && mine.last?.documentChanges.first?.type == .removed })
        let gone = try await alice.document("files/f1").getDocument(source: .server)
        #expect(gone.isDeleted)
        #expect(gone.deletedAt != nil)
        listener.remove()
        aliceListener.remove()
        await devices.close()
        await server.stop()
        server.removeData()
    }

    /// A set-merge into a document another device soft-deleted (and this one never saw) shows
    /// the document at once, as a local prediction; the server keeps it soft-deleted (a write
    /// does not clear `deletedAt`), so watch never adds it to the listener's target. Once
    /// synced, the listener must drop it and say it has no pending writes: the view puts the
    /// acknowledged document in limbo when watch passes its commit, and the limbo resolution
    /// brings the tombstone. Before, the document stayed in the results, pending, for ever.
    @Test(arguments: [false, true])
    func aMergeIntoADocumentSoftDeletedElsewhereLeavesTheListenerOnceSynced(offlineAndReopened: Bool) async throws {
        let server = try await LiveServer()
        let devices = Devices(server)
        let alice = try await devices.open("alice")
        _ = try await alice.document("items/x").setData(["n": .value(.integer(1))]).committed
        _ = try await alice.document("items/x").delete().committed
        var bob = try await devices.open("bob")
        func listen(_ store: DocumentStore) async throws -> (Recorder<QuerySnapshot>, ListenerRegistration) {
            let seen = Recorder<QuerySnapshot>()
            let listener = try await store.collection("items").limit(to: 100).addSnapshotListener(includeMetadataChanges: true) {
                seen.record($0)
            }
            return (seen, listener)
        }
        var (seen, listener) = try await listen(bob)
        let first = seen
        #expect(await eventually { first.last?.metadata.isFromCache == false })
        if offlineAndReopened { try await bob.disableNetwork() }
        _ = try await bob.document("items/x").setData(["n": .value(.integer(95))], merge: true)
        #expect(await eventually { first.last?.ids == ["x"] && first.last?.metadata.hasPendingWrites == true })
        if offlineAndReopened {
            // Closed with the write pending, and opened again: the new view starts from the cache.
            listener.remove()
            await bob.close()
            bob = try await devices.open("bob")
            (seen, listener) = try await listen(bob)
        }
        try await bob.waitForPendingWrites()
        let last = seen
        let synced = await eventually {
            guard let snapshot = last.last else { return false }
            return snapshot.ids.isEmpty && !snapshot.metadata.hasPendingWrites && !snapshot.metadata.isFromCache
        }
        #expect(synced, "\(last.values.map { ($0.ids, $0.metadata) })")
        let onServer = try await bob.document("items/x").getDocument(source: .server)
        #expect(onServer.isDeleted)
        #expect(onServer.get("n") == .integer(95))
        listener.remove()
        await devices.close()
        await server.stop()
        server.removeData()
    }

    @Test func tenThousandOfflineWritesArriveInOrderExactlyOnce() async throws {
        let server = try await LiveServer()
        let devices = Devices(server)
        let phone = try await devices.open("alice")
        try await phone.disableNetwork()
        let items = try phone.collection("items")
        for i in 0..<10_000 {
            _ = try await items.document(String(format: "i%05d", i)).setData(["n": .value(.integer(Int64(i)))])
        }
        #expect(await phone.pendingWriteCount == 10_000)
        try await phone.enableNetwork()
        try await phone.waitForPendingWrites()
        #expect(await phone.pendingWriteCount == 0)

        // On the server: every document once, committed in the order they were written.
        let tenant = try await server.core.store.tenant(TenantID("acme"))
        let stored = try await tenant.query(try DocModel.Query(collection: "items").toTarget(), limit: nil).documents
        #expect(stored.count == 10_000)
        let versions = stored.sorted { $0.key < $1.key }.map(\.version)
        #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 }, "commit versions follow the write order")
        await devices.close()
        await server.stop()
        server.removeData()
    }

    /// Tokens expire (every hour in an app; every 2–3 s here) and the server ends each
    /// connection when its token does. The device connects again with a fresh token at once:
    /// its listener stays live (never `isFromCache`), its writes sync, and its sync status never
    /// says `error`, neither while the streams are busy nor later while they are idle. Before,
    /// an idle stream ended by the expiry left `error: unauthenticated: token expired` in the
    /// status (and `lastSyncError`) until the next write, though everything was synced.
    @Test func aDeviceWhoseTokensExpireKeepsSyncingWithoutReportingAnError() async throws {
        let server = try await LiveServer()
        let devices = Devices(server)
        let tokens = Recorder<String>()
        // 3 s (`exp` is in whole seconds: 2–3 s of use), so that a token is not already
        // expired when a connection slowed by a busy machine presents it.
        let alice = try await devices.open("alice", tokenLifetime: .seconds(3), tokens: tokens)
        let bob = try await devices.open("bob")
        let statuses = Recorder<SyncStatus>()
        let following = Task { for await status in alice.syncStatusUpdates() { statuses.record(.success(status)) } }
        let seen = Recorder<QuerySnapshot>()
        let listener = try await alice.collection("rooms").limit(to: 100).addSnapshotListener(includeMetadataChanges: true) {
            seen.record($0)
        }
        #expect(await eventually { seen.last?.metadata.isFromCache == false })
        let live = seen.count
        // About 9 s of writes from both sides: at least two expiries of each token.
        for i in 0..<20 {
            _ = try await bob.document("rooms/b\(i)").setData(["i": .value(.integer(Int64(i)))]).committed
            if i % 2 == 0 { _ = try await alice.document("rooms/a\(i)").setData(["i": .value(.integer(Int64(i)))]) }
            #expect(await eventually { seen.last?.documents.contains { $0.documentID == "b\(i)" } == true }, "b\(i)")
            try await Task.sleep(for: .milliseconds(450))
        }
        try await alice.waitForPendingWrites()
        // Idle past another expiry of both streams' tokens.
        try await Task.sleep(for: .seconds(4))
        #expect(tokens.count >= 4, "only \(tokens.count) tokens were asked for: no token expired")
        let errors = statuses.values.filter { $0.phase == .error }
        #expect(errors.count == 0, "\(errors.count) error statuses, the first: \(errors.first.map(String.init(describing:)) ?? "")")
        let status = await alice.syncStatus
        #expect(status.phase == .synced, "\(status)")
        let lastError = await alice.lastSyncError
        #expect(lastError == nil, "\(String(describing: lastError))")
        let fromCache = seen.values.dropFirst(live).filter(\.metadata.isFromCache)
        #expect(fromCache.count == 0, "\(fromCache.count) snapshots from the cache after the listener was live")
        #expect(seen.last?.count == 30 && seen.last?.metadata.hasPendingWrites == false)
        following.cancel()
        listener.remove()
        await devices.close()
        await server.stop()
        server.removeData()
    }

    @Test func clientsReconnectAfterAServerRestartAndResume() async throws {
        let server = try await LiveServer()
        let devices = Devices(server)
        let writer = try await devices.open("alice")
        let reader = try await devices.open("bob")
        for i in 0..<50 { _ = try await writer.document("rooms/r\(i)").setData(["i": .value(.integer(Int64(i)))]) }
        try await writer.waitForPendingWrites()
        // The reader writes once too: its write stream is open, and idle, when the server goes.
        _ = try await reader.document("notes/n1").setData(["i": 1]).committed
        let seen = Recorder<QuerySnapshot>()
        let listener = try await reader.collection("rooms").limit(to: 100).addSnapshotListener { seen.record($0) }
        #expect(await eventually { seen.last?.count == 50 && seen.last?.metadata.isFromCache == false })

        try await server.restart()   // same port: clients reconnect with backoff
        _ = try await writer.document("rooms/after").setData(["i": 99])
        try await writer.waitForPendingWrites()
        #expect(await eventually { seen.last?.count == 51 && seen.last?.metadata.isFromCache == false })
        #expect(await eventually { await server.core.health().targets >= 1 })
        // Listening again, and nothing to write: synced, with no error left over from the idle
        // write stream the restart ended (before, it said `offline` until the next write).
        let settled = await eventually {
            let error = await reader.lastSyncError
            return await reader.syncStatus.phase == .synced && error == nil
        }
        let status = await reader.syncStatus
        #expect(settled, "\(status)")
        listener.remove()
        await devices.close()
        await server.stop()
        server.removeData()
    }

    @Test func aRejectedWriteIsRevertedLocallyAndReported() async throws {
        let server = try await LiveServer()
        let devices = Devices(server)
        let alice = try await devices.open("alice")
        let bob = try await devices.open("bob")
        _ = try await alice.document("orders/o1").setData(["total": 10]).committed
        let read = try await bob.document("orders/o1").getDocument(source: .server)
        let seenVersion = try #require(read.version)
        _ = try await alice.document("orders/o1").updateData(["total": 20]).committed   // bob's version is now stale

        let errors = bob.writeErrors()
        let stale = try await bob.document("orders/o1").updateData(["total": 30], ifVersion: seenVersion)
        #expect(try await bob.document("orders/o1").getDocument(source: .cache).get("total") == 30)   // optimistic
        await #expect(throws: DocError.self) { _ = try await stale.committed }
        do { _ = try await stale.committed } catch { #expect(error.code == .failedPrecondition) }
        var iterator = errors.makeAsyncIterator()
        let reported = await iterator.next()
        #expect(reported?.paths == ["orders/o1"])
        #expect(reported?.error.code == .failedPrecondition)
        // Reverted to the last server state bob's cache knows (it does not listen to the order).
        #expect(await eventually { (try? await bob.document("orders/o1").getDocument(source: .cache).get("total")) == 10 })
        #expect(await bob.pendingWriteCount == 0)
        await devices.close()
        await server.stop()
        server.removeData()
    }

    @Test func theRulesAreEnforcedAndTheClientSurfacesDenials() async throws {
        let server = try await LiveServer(rules: try LiveServer.defaultRules())
        let devices = Devices(server)
        let admin = try await devices.open("root", claims: ["admin": true])
        let member = try await devices.open("alice")
        _ = try await admin.document("accounts/a").setData(["balance": 100]).committed

        // A member may read accounts but not write them directly.
        #expect(try await member.document("accounts/a").getDocument(source: .server).get("balance") == 100)
        let denied = try await member.document("accounts/a").updateData(["balance": 1_000_000])
        do {
            _ = try await denied.committed
            Issue.record("a member wrote an account")
        } catch {
            #expect(error.code == .permissionDenied)
        }
        #expect(await eventually { (try? await member.document("accounts/a").getDocument(source: .cache).get("balance")) == 100 })

        // A client may create a pending request but not claim it applied.
        let forged = try await member.document("requests/forged").setData([
            "type": "transfer", "status": "applied", "createdBy": "alice", "params": .value(.map([:])),
        ])
        do { _ = try await forged.committed; Issue.record("a forged request status was accepted") } catch {
            #expect(error.code == .permissionDenied)
        }

        // Another tenant's token reaches nothing here.
        let outsider = try await devices.open("mallory", tenant: "globex")
        let outside = try await outsider.document("accounts/a").getDocument(source: .server)
        #expect(!outside.exists)
        await devices.close()
        await server.stop()
        server.removeData()
    }

    @Test func requestsSubmittedOfflineAreAppliedOnceAfterReconnect() async throws {
        let server = try await LiveServer(rules: try LiveServer.defaultRules(), examples: true)
        let devices = Devices(server)
        let admin = try await devices.open("root", claims: ["admin": true])
        _ = try await admin.document("accounts/a").setData(["balance": 1_000]).committed
        _ = try await admin.document("accounts/b").setData(["balance": 0]).committed

        let alice = try await devices.open("alice")
        let seen = try await alice.document("accounts/a").getDocument(source: .server)
        try await alice.disableNetwork()
        let handle = try await alice.submitRequest(
            type: "transfer", params: ["from": "accounts/a", "to": "accounts/b", "amount": 300],
            base: [try alice.document("accounts/a"): try #require(seen.version)])
        let statuses = Recorder<RequestStatus>()
        let watching = Task { for try await status in handle.status { statuses.record(.success(status)) } }
        #expect(await eventually { statuses.values == [.pendingLocal] })
        try await alice.enableNetwork()
        #expect(await eventually { statuses.last?.isFinal == true })
        #expect(statuses.values.first == .pendingLocal)
        #expect(statuses.last == .applied(result: .map(["from": 700, "to": 300])))
        _ = await watching.result

        // A second request on the same (now stale) base is rejected, changing nothing.
        let stale = try await alice.submitRequest(
            type: "transfer", params: ["from": "accounts/a", "to": "accounts/b", "amount": 300],
            base: [try alice.document("accounts/a"): try #require(seen.version)])
        guard case .rejected(let code, let message) = try await stale.result() else { Issue.record("stale request applied"); return }
        #expect(code == .failedPrecondition)
        #expect(message.contains("stale"))
        #expect(try await alice.document("accounts/a").getDocument(source: .server).get("balance") == 700)
        #expect(try await alice.document("accounts/b").getDocument(source: .server).get("balance") == 300)

        // The status survives a restart of the app.
        await alice.close()
        let again = try await devices.open("alice")
        #expect(try await again.request(id: handle.id).result() == .applied(result: .map(["from": 700, "to": 300])))
        await devices.close()
        await server.stop()
        server.removeData()
    }
}

extension QuerySnapshot {
    var ids: [String] { documents.map(\.documentID) }
}
