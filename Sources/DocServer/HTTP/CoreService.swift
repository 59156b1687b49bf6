internal import Logging
internal import ServiceLifecycle

/// The server core's periodic work and its part of a graceful shutdown, as a service of the
/// HTTP server's service group.
///
/// Runs ``DocServerCore/tick()`` and ``DocServerCore/runMaintenance(sharingEvery:)`` on their
/// timers until a graceful shutdown begins, then shuts the core down: new writes are refused,
/// the writes already queued are committed, and every connection ends with a fatal
/// `unavailable` frame.
/// It is listed after the HTTP application in the group, so it shuts down first and the
/// HTTP server then has no open streams left to wait for.
struct CoreService: Service {
    let core: DocServerCore
    let settings: HTTPServerSettings
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown { [core, settings, logger] in
            // Requests committed before a crash and never processed: process them now.
            let recovered = await core.recoverPendingRequests()
            if recovered > 0 { logger.info("processed requests left pending", metadata: ["requests": "\(recovered)"]) }
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    while await Self.sleep(settings.tickInterval) { await core.tick() }
                }
                group.addTask {
                    // Commits made through other server instances on the same database.
                    await core.followCommits()
                }
                group.addTask {
                    // A request whose processing failed for a transient reason is retried;
                    // shared with the other instances on the store: each tenant once a period.
                    while await Self.sleep(Self.requestSweepInterval) {
                        await core.recoverPendingRequests(sharingEvery: Self.requestSweepInterval / 2)
                    }
                }
                group.addTask {
                    while await Self.sleep(settings.maintenanceInterval) {
                        // Shared with the other instances on the store: each tenant once a period.
                        let report = await core.runMaintenance(sharingEvery: settings.maintenanceInterval / 2)
                        logger.info("maintenance", metadata: [
                            "outcomesPruned": "\(report.outcomesPruned)", "changesPruned": "\(report.changesPruned)",
                            "attachmentsDeleted": "\(report.attachmentsDeleted)",
                            "tenantsMaintainedElsewhere": "\(report.tenantsMaintainedElsewhere)",
                            "failures": "\(report.failures.count)",
                        ])
                    }
                }
            }
        }
        logger.info("shutting down: committing queued writes, closing streams")
        await core.shutdown()
    }

    static let requestSweepInterval: Duration = .seconds(60)

    /// Sleeps; false when the task was cancelled.
    private static func sleep(_ duration: Duration) async -> Bool {
        do {
            try await Task.sleep(for: duration)
            return !Task.isCancelled
        } catch {
            return false
        }
    }
}
