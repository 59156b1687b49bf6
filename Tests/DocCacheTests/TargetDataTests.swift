import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("Target data", .cpuBound)
struct TargetDataTests {
    @Test func resumeTokenUpdateClearsExpectedCount() throws {
        let target = try Query(collection: "rooms").limit(to: 10).toTarget()
        var data = TargetData(target: target, targetID: 2, purpose: .listen, sequenceNumber: 1)
        data.expectedCount = 5
        let updated = data.withResumeToken([1, 2], snapshotVersion: SnapshotVersion(microseconds: 7))
        #expect(updated.resumeToken == [1, 2])
        #expect(updated.snapshotVersion == SnapshotVersion(microseconds: 7))
        #expect(updated.expectedCount == nil)
        #expect(updated.targetID == 2 && updated.target == target)
        #expect(data.withSequenceNumber(9).sequenceNumber == 9)
    }
}
