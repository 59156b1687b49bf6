import DocModel
import Foundation
import Testing
@testable import DocCache

/// Request documents on the client without a server: the write, the status, re-obtaining a
/// handle after a restart, the outbox list.
@Suite("Request documents offline")
struct RequestSubmitTests {
    @Test func aRequestIsAQueuedWriteWithTheDocumentedShape() async throws {
        let dir = TemporaryDirectory("requests")
        let store = try await DocumentStore.open(directory: dir.path, tenant: "acme", user: "alice")
        let account = try store.document("accounts/a")
        let handle = try await store.submitRequest(
            type: "transfer", params: ["from": "accounts/a", "to": "accounts/b", "amount": 500],
            base: [account: SnapshotVersion(microseconds: 1234)])
        #expect(handle.id.count == 36)
        #expect(handle.reference.path == "requests/\(handle.id)")
        let snapshot = try await handle.reference.getDocument(source: .cache)
        let data = try #require(snapshot.data())
        #expect(data["type"] == "transfer")
        #expect(data["status"] == "pending")
        #expect(data["createdBy"] == "alice")
        #expect(data["base"] == .map(["accounts/a": 1234]))
        #expect(data["params"] == .map(["from": "accounts/a", "to": "accounts/b", "amount": 500]))
        #expect(snapshot.metadata.hasPendingWrites)
        #expect(try await store.pendingWrites().map(\.paths) == [["requests/\(handle.id)"]])

        var statuses = handle.status.makeAsyncIterator()
        #expect(try await statuses.next() == .pendingLocal)

        await #expect(throws: DocError.self) { try await store.submitRequest(type: "", params: [:]) }
        // A base the server could not verify in one commit: refused here, nothing queued.
        var tooMany: [DocumentReference: SnapshotVersion] = [:]
        for i in 0...DocumentLimits.maxRequestBaseEntries { tooMany[try store.document("accounts/x\(i)")] = SnapshotVersion(microseconds: 1) }
        let refusal = await #expect(throws: DocError.self) { try await store.submitRequest(type: "transfer", params: [:], base: tooMany) }
        #expect(refusal?.code == .invalidArgument && refusal?.location == "base")
        #expect(try await store.pendingWrites().count == 1)
        await store.close()
    }

    @Test func aHandleCanBeReobtainedAfterARestartAndTheOutboxListsRequests() async throws {
        let dir = TemporaryDirectory("requests-restart")
        var store = try await DocumentStore.open(directory: dir.path, tenant: "acme", user: "alice")
        let first = try await store.submitRequest(type: "transfer", params: ["amount": 1])
        try await Task.sleep(for: .milliseconds(2))
        let second = try await store.submitRequest(type: "setTaxRate", params: ["taxRateBasisPoints": 1900])
        await store.close()

        store = try await DocumentStore.open(directory: dir.path, tenant: "acme", user: "alice")
        var statuses = try store.request(id: first.id).status.makeAsyncIterator()
        #expect(try await statuses.next() == .pendingLocal)
        let outbox = try await store.requests(source: .cache)
        #expect(outbox.map(\.id) == [second.id, first.id] || outbox.map(\.id) == [first.id, second.id])
        #expect(Set(outbox.map(\.type)) == ["transfer", "setTaxRate"])
        #expect(outbox.allSatisfy { $0.status == .pendingLocal })
        #expect(try await store.requests(whereStatus: "applied", source: .cache).isEmpty)
        #expect(try await store.requests(whereStatus: "pendingLocal", source: .cache).count == 2)
        await store.close()
    }

    @Test func statusesAreReadFromTheDocument() {
        func snapshot(_ data: [String: Value]?, pending: Bool = false, fromCache: Bool = false) -> DocumentSnapshot {
            let key = try! DocumentKey("requests/r")
            var document = data.map { Document(key: key, data: ObjectValue($0), version: SnapshotVersion(microseconds: 5)) }
            document?.hasLocalMutations = pending
            return DocumentSnapshot(key: key, document: document, fromCache: fromCache)
        }
        #expect(RequestStatus(snapshot(["status": "pending"], pending: true)) == .pendingLocal)
        #expect(RequestStatus(snapshot(["status": "pending"])) == .pendingServer)
        #expect(RequestStatus(snapshot(["status": "applied", "result": .map(["from": 1])])) == .applied(result: .map(["from": 1])))
        #expect(RequestStatus(snapshot(["status": "rejected", "error": .map(["code": "failedPrecondition", "message": "stale: a"])]))
                == .rejected(code: .failedPrecondition, message: "stale: a"))
        if case .rejected(let code, _) = RequestStatus(snapshot(nil)) { #expect(code == .notFound) } else { Issue.record("not rejected") }
        #expect(RequestStatus.applied(result: .null).isFinal)
        #expect(!RequestStatus.pendingServer.isFinal)
    }
}
