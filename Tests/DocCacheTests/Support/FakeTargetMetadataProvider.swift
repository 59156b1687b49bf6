@testable import DocCache
import DocModel

/// A ``TargetMetadataProvider`` backed by dictionaries the test fills.
final class FakeTargetMetadataProvider: TargetMetadataProvider {
    /// The listened targets.
    var targets: [TargetID: TargetData] = [:]
    /// The documents each target has in the sync engine.
    var syncedKeys: [TargetID: Set<DocumentKey>] = [:]

    init() {}

    /// Makes `targetData` listened to, with `keys` as its synced documents.
    func setSyncedKeys(_ keys: Set<DocumentKey>, for targetData: TargetData) {
        targets[targetData.targetID] = targetData
        syncedKeys[targetData.targetID] = keys
    }

    func remoteKeys(for targetID: TargetID) -> Set<DocumentKey> {
        syncedKeys[targetID] ?? []
    }

    func targetData(for targetID: TargetID) -> TargetData? {
        targets[targetID]
    }
}
