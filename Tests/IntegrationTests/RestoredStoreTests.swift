import DocCache
import DocModel
import DocTestSupport
import Foundation
import Testing

/// A store restored from a device backup (or copied to another device) goes on with the client
/// id and batch numbers it had when the backup was taken, while the original went on writing:
/// its next batches reuse `(clientId, batchId)` pairs the server already answered. The server
/// answers the first such batch with a batch id collision (`DocError.batchIDCollision`), and
/// the store takes a new client id.
@Suite("A store restored from a backup", .serialized, .timeLimit(.minutes(2)))
struct RestoredStoreTests {
    /// `pruned`: the old phone's outcomes are pruned (but its latest) before the restored store
    /// syncs, as when it is restored days after the backup: its batches then find no outcome
    /// but a later one (`DocError.batchProcessedBefore`), and as it never sent them, it takes a
    /// new client id all the same.
    @Test(arguments: [false, true])
    func writesOfARestoredStoreReachTheServer(pruned: Bool) async throws {
        let server = try await LiveServer(rules: try LiveServer.defaultRules(), outcomeRetentionMicros: pruned ? 0 : nil)
        defer { server.removeData() }
        let devices = ClientSyncTests.Devices(server)

        let phone = try await devices.open("alice", device: "phone")
        _ = try await phone.document("notes/before-backup").setData(["n": 1]).committed
        await phone.close()
        // The nightly backup, then a day of work on the old phone.
        try FileManager.default.copyItem(atPath: devices.root + "/phone", toPath: devices.root + "/new-phone")
        let old = try await devices.open("alice", device: "phone")
        for i in 1...3 { _ = try await old.document("notes/old-\(i)").setData(["n": .value(.integer(Int64(i)))]).committed }
        await old.close()
        if pruned {
            #expect(await server.core.runMaintenance().outcomesPruned == 3, "all but the old phone's latest")
        }

        // The backup restored on a new phone: its next batch ids are ones the old phone used
        // after the backup. The server says so; the store takes a new client id and sends its
        // batches again under it, so its writes reach the server like any other.
        // Written offline first, so that they go in one frame: the server attempts none after
        // the first collision, and the store sends them all again in order, each applied once
        // (the order document ends with the last write, the counter counts each increment once).
        let restored = try await devices.open("alice", device: "new-phone")
        try await restored.disableNetwork()
        var writes: [WriteHandle] = []
        for i in 1...4 {
            writes.append(try await restored.document("notes/new-\(i)").setData(["n": .value(.integer(Int64(i)))]))
            writes.append(try await restored.document("notes/order").setData(["last": .value(.integer(Int64(i)))]))
            writes.append(try await restored.document("counters/new-phone").setData(["n": .increment(1)], merge: true))
        }
        try await restored.enableNetwork()
        for write in writes { _ = try await write.committed }
        #expect(try await restored.failedWrites().isEmpty)
        let office = try await devices.open("alice", device: "office")
        for path in ["notes/before-backup", "notes/old-1", "notes/old-2", "notes/old-3", "notes/new-1", "notes/new-4"] {
            #expect(try await office.document(path).getDocument(source: .server).exists, "\(path)")
        }
        // Each write once: the new phone's writes did not answer as the old phone's.
        #expect(try await office.document("notes/old-2").getDocument(source: .server).get("n") == .integer(2))
        #expect(try await office.document("notes/new-2").getDocument(source: .server).get("n") == .integer(2))
        #expect(try await office.document("notes/order").getDocument(source: .server).get("last") == .integer(4))
        #expect(try await office.document("counters/new-phone").getDocument(source: .server).get("n") == .integer(4))
        await devices.close()
        await server.stop()
    }
}
