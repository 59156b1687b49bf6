internal import LevelDB
internal import Synchronization

/// Storage failures injected on purpose: the seam through which tests reach the code paths
/// that meet a failing disk (``Persistence/faults``). A read (a `get`, or the start of a
/// scan) or a commit chosen by ``fail(_:in:at:count:)`` throws LevelDB's I/O error, as a
/// failing device does, and is mapped to a `DocError` like a real one. A store without one
/// (every store outside tests) pays nothing.
package final class StorageFaults: Sendable {
    /// What a fault hits.
    package enum Operation: Hashable, Sendable, CustomStringConvertible {
        /// A point read or the start of a scan.
        case read
        /// The commit of a transaction with writes.
        case commit

        package var description: String { self == .read ? "read" : "commit" }
    }

    private struct Plan {
        /// Only operations of transactions with this label count (`nil`: all).
        var label: String?
        /// Operations still to pass before the first failure.
        var skip: Int
        /// Failures still to inject once they start (`Int.max`: forever).
        var failures: Int
    }

    private struct State {
        var plans: [Operation: Plan] = [:]
        var injected = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// Makes the `n`th `operation` from now (1 = the next one) and the `count - 1` after it
    /// fail; `count: Int.max` fails every one from then on (a dead disk). With `label`, only
    /// the operations of transactions of that label (e.g. `"Acknowledge batch"`) count.
    package func fail(_ operation: Operation, in label: String? = nil, at n: Int = 1, count: Int = 1) {
        state.withLock { $0.plans[operation] = Plan(label: label, skip: max(0, n - 1), failures: max(0, count)) }
    }

    /// Failures injected so far.
    package var injected: Int { state.withLock { $0.injected } }

    /// Throws when this `operation` of a transaction labelled `label` is planned to fail.
    func check(_ operation: Operation, _ label: String) throws(LevelDBError) {
        let number: Int? = state.withLock { state in
            guard var plan = state.plans[operation], plan.label == nil || plan.label == label else { return nil }
            if plan.skip > 0 {
                plan.skip -= 1
                state.plans[operation] = plan
                return nil
            }
            guard plan.failures > 0 else { return nil }
            if plan.failures != Int.max { plan.failures -= 1 }
            state.plans[operation] = plan
            state.injected += 1
            return state.injected
        }
        if let number { throw LevelDBError(.ioError, "injected fault #\(number): \(operation) in \"\(label)\"") }
    }
}
