import Foundation
public import Testing

/// Runs a suite's tests off the cooperative pool, on one thread that all such suites share.
///
/// Swift Testing starts every test at once on the cooperative pool, which has one thread per
/// core (two on these machines). A test that computes for seconds without suspending (a
/// property or fuzz test, a model check, thousands of rules evaluations in a debug build)
/// holds one of those threads; two of them hold the whole pool. Every other test's `await`
/// then waits behind them: with the property tests first in the run, the pool stalled for
/// 60–70 s, long enough for the liveness caps of that time (`eventually`, 60 s) to expire
/// in tests that had nothing wrong with them, and a run on a slower CI machine failed and hung.
///
/// Tests under this trait run their jobs on ``CPUBoundExecutor/shared`` instead: one thread
/// of its own that the kernel shares with the pool, so the pool keeps its threads for the
/// tests that wait on servers, sockets and timers. The work is the same; only who waits for
/// whom changes.
///
/// Only for tests that compute: a test under this trait must not block its thread waiting
/// for other work on the same executor (every test under the trait shares that one thread).
public struct CPUBoundTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(CPUBoundExecutor.shared) {
            try await function()
        }
    }
}

extension Trait where Self == CPUBoundTrait {
    /// The suite's or test's work runs on ``CPUBoundExecutor/shared``, off the cooperative
    /// pool (``CPUBoundTrait``).
    public static var cpuBound: Self { CPUBoundTrait() }
}

/// A task executor with one thread of its own, which runs its jobs in the order they came.
public final class CPUBoundExecutor: TaskExecutor, @unchecked Sendable {
    /// The executor of every suite under ``CPUBoundTrait``.
    public static let shared = CPUBoundExecutor(name: "cpu-bound tests")

    private let condition = NSCondition()
    /// Guarded by `condition`; taken from `next`, which only moves forward until the queue is
    /// empty (then both are reset), so a job is taken in O(1).
    private var jobs: [UnownedJob] = []
    private var next = 0

    private init(name: String) {
        let thread = Thread { [unowned self] in self.run() }
        thread.name = name
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
                condition.wait()
            }
            let job = jobs[next]
            next += 1
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
