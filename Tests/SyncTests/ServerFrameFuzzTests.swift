import DocTestSupport
import DocModel
import Testing
@testable import DocCache

/// The client's side of ``JSONMutator``: a device whose connection delivers about one server
/// frame in three edited (a number made extreme, a string odd, a value a typed form out of
/// range, a key dropped) while it listens (a limit window, a filter, `limitToLast`, a
/// document), writes, counts on the server and reconnects, and another device writes the
/// documents it listens to. The client may refuse a frame, fail a stream and reconnect, or
/// believe an edited document, but must never trap; once the frames are honest again it must
/// still write through to the server and answer from its cache.
@Suite("Mutated server frames never crash the client")
struct ServerFrameFuzzTests {
    @Test(arguments: [UInt64(0xC11E_0001), 0xC11E_0002, 0xC11E_0003])
    func aClientFedMutatedFramesKeepsWorking(seed: UInt64) async throws {
        try await SyncHarness.run { harness in
            let office = try await harness.openStore(device: "office")
            for i in 0..<12 { _ = try await office.document("notes/n\(i)").setData(Self.note(i)).committed }
            let transport = InProcessTransport(host: harness.host)
            let device = try await harness.openStore(device: "device", transport: transport)
            transport.mutateServerFrames(seed: seed, every: 3)
            var listeners: [ListenerRegistration] = []
            for query in [
                try device.collection("notes").order(by: "n").limit(to: 5),
                try device.collection("notes").whereField("n", .greaterThan, .integer(6)).limit(to: 4),
                try device.collection("notes").order(by: "t").limit(toLast: 3),
            ] {
                listeners.append(try await query.addSnapshotListener(includeMetadataChanges: true) { _ in })
            }
            listeners.append(try await device.document("notes/n1").addSnapshotListener { _ in })
            var mutator = JSONMutator(seed: seed ^ 0xFFFF)
            for step in 0..<400 {
                let i = mutator.int(in: 0..<16)
                switch mutator.int(in: 0..<10) {
                case 0..<4: _ = try await office.document("notes/n\(i)").setData(Self.note(i + step))
                case 4: _ = try await office.document("notes/n\(i)").delete()
                case 5..<7: _ = try await device.document("notes/d\(i)").setData(Self.note(step))
                case 7: _ = try? await device.collection("notes").whereField("n", .lessThan, .integer(50)).count(source: .server)
                case 8:
                    try await device.disableNetwork()
                    try await device.enableNetwork()
                default: try await Task.sleep(for: .milliseconds(mutator.int(in: 1..<10)))
                }
            }
            #expect(transport.stats.mutatedFrames > 20, "\(transport.stats.mutatedFrames) frames edited")

            // Honest frames again: writes reach the server, the cache answers.
            transport.stopMutatingServerFrames()
            try await device.disableNetwork()
            try await device.enableNetwork()
            let after = try await device.document("notes/after").setData(["n": 1_000])
            _ = try await after.committed
            #expect(try await office.document("notes/after").getDocument(source: .server).int("n") == 1_000)
            #expect(try await device.document("notes/after").getDocument(source: .cache).int("n") == 1_000)
            _ = try await device.collection("notes").getDocuments(source: .cache)
            for listener in listeners { listener.remove() }
        }
    }

    static func note(_ i: Int) -> [String: FieldValue] {
        ["n": .value(.integer(Int64(i))), "t": .value(.timestamp(try! Timestamp(seconds: 1_700_000_000 + Int64(i)))),
         "tags": .value(.array([.string("t\(i % 3)")])), "m": .value(.map(["k": .integer(Int64(i))]))]
    }
}
