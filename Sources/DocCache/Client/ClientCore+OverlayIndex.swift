internal import DocModel

extension ClientCore {
    /// Local writes after which their overlays are indexed (``OverlayIndex``): until then a
    /// query reads them one by one, which costs less than indexing each write as it is made.
    static let overlayIndexingAfterWrites = 32
    /// How long after the write that reached ``overlayIndexingAfterWrites``, or after opening
    /// a store that holds unindexed overlays, the indexing runs: a burst of writes is indexed
    /// together after it, writes that reach the server by then are not indexed at all (their
    /// overlays leave with them), and the app's start is not slowed.
    static let overlayIndexingDelay: Duration = .seconds(1)
    /// Batches whose overlays are indexed per step (one transaction; other work of the store
    /// runs between steps).
    static let overlayIndexingStep = 256

    /// Counts a local write; once ``overlayIndexingAfterWrites`` are unindexed, schedules the
    /// indexing of their overlays.
    func noteLocalWrite() {
        unindexedWrites += 1
        if unindexedWrites >= Self.overlayIndexingAfterWrites { scheduleOverlayIndexing() }
    }

    /// Schedules an indexing step after ``overlayIndexingDelay`` unless one is scheduled.
    func scheduleOverlayIndexing() {
        guard overlayIndexingTimer == nil else { return }
        overlayIndexingTimer = Self.scheduleOverlayIndexing(on: scheduler, for: self, after: Self.overlayIndexingDelay)
    }

    /// Schedules one overlay-indexing step on the scheduler (also from the initializer).
    nonisolated static func scheduleOverlayIndexing(
        on scheduler: ActorScheduler, for core: ClientCore, after delay: Duration
    ) -> any ScheduledTimer {
        scheduler.schedule(.overlayIndexing, after: delay) { [weak core] in
            core?.assumeIsolated { $0.runOverlayIndexingStep() }
        }
    }

    /// One step: indexes the overlays of up to ``overlayIndexingStep`` batches, and schedules
    /// the next at once while more remain. While batches are on their way to the server it
    /// waits instead: they leave the queue soon, and their overlays with them.
    private func runOverlayIndexingStep() {
        overlayIndexingTimer = nil
        guard !isClosed, storageFailure == nil else { return }
        guard activity.sending.isEmpty else {
            scheduleOverlayIndexing()
            return
        }
        do throws(DocError) {
            let more = try localStore.indexOverlays(maxBatches: Self.overlayIndexingStep)
            overlayIndexingSteps += 1
            if more {
                overlayIndexingTimer = Self.scheduleOverlayIndexing(on: scheduler, for: self, after: .zero)
            } else {
                unindexedWrites = 0
            }
        } catch {
            storageFailed(error, while: "indexing pending writes")
        }
    }

    /// Indexes every unindexed overlay now, as the scheduled steps would (a store that a
    /// long session left behind; benchmarks and tests).
    package func indexOverlaysNow() throws(DocError) {
        try checkOpen()
        while try localStore.indexOverlays(maxBatches: Self.overlayIndexingStep) {}
        unindexedWrites = 0
    }

    /// How many pending batches are above the overlay index's watermark, up to `limit`
    /// (tests).
    package func unindexedOverlayBatches(upTo limit: Int) throws(DocError) -> Int {
        try checkOpen()
        return try localStore.unindexedOverlayBatches(upTo: limit)
    }
}
