import DocModel

/// The transport of a store opened without a server: streams that never connect. Writes wait
/// in the durable queue, listeners answer from the cache; nothing is ever sent.
package final class OfflineDatastore: Datastore {
    package init() {}

    package func makeWatchStream(delegate: any WatchStreamDelegate) -> any WatchStream { OfflineWatchStream() }
    package func makeWriteStream(delegate: any WriteStreamDelegate) -> any WriteStream { OfflineWriteStream() }

    private final class OfflineWatchStream: WatchStream {
        private(set) var isStarted = false
        var isOpen: Bool { false }
        func start() { isStarted = true }
        func stop() { isStarted = false }
        func markIdle() {}
        func watch(_ targetData: TargetData) {}
        func unwatch(_ targetID: TargetID) {}
    }

    private final class OfflineWriteStream: WriteStream {
        private(set) var isStarted = false
        var isOpen: Bool { false }
        var isHandshakeComplete: Bool { false }
        var lastStreamToken: ResumeToken = []
        func start() { isStarted = true }
        func stop() { isStarted = false }
        func markIdle() {}
        func writeHandshake() {}
        func write(_ batch: MutationBatch) {}
    }
}
