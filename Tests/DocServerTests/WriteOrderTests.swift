import DocModel
import DocProtocol
import DocTestSupport
import Synchronization
import Testing
@testable import DocServer

/// A connection's batches are applied in the order the client sent them. When one fails for a
/// transient reason (the store could not commit it now), the client closes its write stream
/// and sends that batch again, then every later one; a later batch already on its way on the
/// same connection (the next frame of the client's pipeline) must not be committed ahead of it.
@Suite struct WriteOrderTests {
    /// A store whose next commit fails once (`unavailable`) when armed (a group commit too:
    /// the tenant store's default commits a group's batches one by one through `commit`).
    final class OnceFailingStore: ForwardingServerStore {
        struct Tenant: ForwardingTenantStore {
            let base: any TenantStore
            let owner: OnceFailingStore
            func commit(_ request: CommitRequest) async throws(DocError) -> CommitResult {
                try owner.failIfArmed()
                return try await base.commit(request)
            }
        }

        let base: LevelDBServerStore
        let armed = Mutex(false)
        init(base: LevelDBServerStore) { self.base = base }
        func wrap(_ tenant: any TenantStore) -> any TenantStore { Tenant(base: tenant, owner: self) }
        func failIfArmed() throws(DocError) {
            if armed.withLock({ armed in defer { armed = false }; return armed }) {
                throw DocError(.unavailable, "the store could not commit now (test)")
            }
        }
    }

    static func note(_ text: String) -> [Mutation] { [T.set("notes/n", ["text": .string(text)])] }

    @Test(arguments: [false, true], [false, true])
    func aBatchAfterOneThatFailedForNowIsNotCommittedAheadOfIt(grouped: Bool, sameConnection: Bool) async throws {
        let server = TestServer()
        let store = OnceFailingStore(base: server.store)
        let core = server.core(over: store)
        func send(_ batchID: Int, _ text: String, on connection: ServerConnection) async -> ServerMessage {
            server.clock.advance(by: 10)
            if grouped {
                return await core.write(.init(clientID: "c", batches: [.init(batchID: batchID, mutations: Self.note(text))]),
                                        on: connection)
            }
            return await core.write(.init(clientID: "c", batchID: batchID, mutations: Self.note(text)), on: connection)
        }
        func failed(_ answer: ServerMessage) -> DocError? {
            switch answer {
            case .writeError(let e): e.error
            case .writeResults(let r): r.answers.first.flatMap { if case .failed(_, let error) = $0 { error } else { nil } }
            default: nil
            }
        }

        let first = try await core.handshake(tenant: "acme", uid: "u", clientID: "c")
        store.armed.withLock { $0 = true }
        let one = await send(1, "older", on: first)
        #expect(failed(one)?.code == .unavailable, "\(one)")
        // The client's next batch, sent before it heard of the failure: not committed.
        let two = await send(2, "newer", on: first)
        #expect(failed(two)?.code == .unavailable, "\(two)")
        #expect(failed(two)?.message.contains("not attempted") == true, "\(two)")

        // The client sends both again, in order: on a new connection (as DocCache does), or
        // on the same one (the failed batch first ends the halt).
        let again: ServerConnection
        if sameConnection {
            again = first
        } else {
            await core.close(first)
            again = try await core.handshake(tenant: "acme", uid: "u", clientID: "c")
        }
        #expect(failed(await send(1, "older", on: again)) == nil)
        #expect(failed(await send(2, "newer", on: again)) == nil)
        let stored = try await server.tenantStore("acme").documents([T.key("notes/n")]).documents[T.key("notes/n")]
        #expect(stored?.data["text"] == .string("newer"), "the older batch was applied last: \(String(describing: stored?.data))")
    }

    /// On the same connection, after batch 2 failed for now: a frame that leaves it out but
    /// holds a later one is refused whole; one that sends it again before the later ones (an
    /// earlier batch in front, answered from its outcome) goes through, in order.
    @Test func onlyAFrameThatSendsTheFailedBatchBeforeLaterOnesIsAttempted() async throws {
        let server = TestServer()
        let store = OnceFailingStore(base: server.store)
        let core = server.core(over: store)
        let connection = try await core.handshake(tenant: "acme", uid: "u", clientID: "c")
        func frame(_ batches: [(Int, String)]) async -> [ServerMessage.WriteResults.Answer] {
            server.clock.advance(by: 10)
            let answer = await core.write(.init(clientID: "c", batches: batches.map { .init(batchID: $0.0, mutations: Self.note($0.1)) }),
                                          on: connection)
            guard case .writeResults(let results) = answer else { return [] }
            return results.answers
        }
        func committed(_ answers: [ServerMessage.WriteResults.Answer]) -> [Int] {
            answers.compactMap { if case .committed(let id, _, _) = $0 { id } else { nil } }
        }

        #expect(committed(await frame([(1, "one")])) == [1])
        store.armed.withLock { $0 = true }
        #expect(committed(await frame([(2, "two")])) == [])
        // Batch 3 without batch 2 in front of it: nothing of the frame is attempted.
        #expect(committed(await frame([(1, "one"), (3, "three")])) == [])
        #expect(committed(await frame([(1, "one"), (2, "two"), (3, "three")])) == [1, 2, 3])
        let stored = try await server.tenantStore("acme").documents([T.key("notes/n")]).documents[T.key("notes/n")]
        #expect(stored?.data["text"] == .string("three"))
    }
}
