import DocModel
import DocProtocol
import Testing
@testable import DocCache

@Suite("Server frames → watch changes")
struct WatchChangeMappingTests {
    let key = try! DocumentKey("rooms/r1")

    @Test func onlyANoChangeForAllTargetsWithAVersionIsAGlobalSnapshot() {
        let global = ServerMessage.targetChange(.init(state: .noChange, targetIDs: [], resumeToken: [1, 2], snapshotVersion: SnapshotVersion(microseconds: 50)))
        #expect(global.watchChange?.snapshotVersion == SnapshotVersion(microseconds: 50))
        #expect(global.watchChange?.change == .target(.init(state: .noChange, targetIDs: [], resumeToken: [1, 2])))
        let perTarget = ServerMessage.targetChange(.init(state: .noChange, targetIDs: [2], resumeToken: [1], snapshotVersion: SnapshotVersion(microseconds: 50)))
        #expect(perTarget.watchChange?.snapshotVersion == SnapshotVersion.none)
        let current = ServerMessage.targetChange(.init(state: .current, targetIDs: [2], resumeToken: [9]))
        #expect(current.watchChange?.change == .target(.init(state: .current, targetIDs: [2], resumeToken: [9])))
        let refused = DocError(.invalidArgument, "no limit")
        let removed = ServerMessage.targetChange(.init(state: .removed, targetIDs: [6], cause: refused))
        #expect(removed.watchChange?.change == .target(.init(state: .removed, targetIDs: [6], cause: refused)))
    }

    @Test func documentFramesBecomeDocumentChanges() {
        let document = Document(key: key, data: ObjectValue(["a": .integer(1)]), version: SnapshotVersion(microseconds: 7))
        let change = ServerMessage.documentChange(.init(document: document, targetIDs: [2], removedTargetIDs: [4]))
        #expect(change.watchChange?.change == .document(.init(updatedTargetIDs: [2], removedTargetIDs: [4], key: key, document: .document(document))))
        let delete = ServerMessage.documentDelete(.init(key: key, version: SnapshotVersion(microseconds: 8), removedTargetIDs: [2]))
        #expect(delete.watchChange?.change == .document(.init(
            updatedTargetIDs: [], removedTargetIDs: [2], key: key, document: .noDocument(NoDocument(key: key, version: SnapshotVersion(microseconds: 8))))))
        let remove = ServerMessage.documentRemove(.init(key: key, version: SnapshotVersion(microseconds: 9), removedTargetIDs: [2]))
        #expect(remove.watchChange?.change == .document(.init(updatedTargetIDs: [], removedTargetIDs: [2], key: key, document: nil)))
        let filter = ServerMessage.existenceFilter(.init(targetID: 2, count: 3))
        #expect(filter.watchChange?.change == .existenceFilter(targetID: 2, count: 3))
        let bloom = ServerMessage.existenceFilter(.init(
            targetID: 2, count: 3, bloomFilter: .init(bitmap: [1, 2], padding: 5, hashCount: 4)))
        #expect(bloom.watchChange?.change == .existenceFilter(
            targetID: 2, count: 3, bloomFilter: .init(bitmap: [1, 2], padding: 5, hashCount: 4)))
        #expect(ServerMessage.welcome(.init(connectionID: "c-1")).watchChange == nil)
        #expect(ServerMessage.writeHandshake(.init(streamToken: [1])).watchChange == nil)
    }
}
