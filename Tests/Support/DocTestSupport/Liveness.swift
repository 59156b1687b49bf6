public import DocModel
import Synchronization

/// Polls `condition` until it holds or `seconds` pass. A liveness check, not a timing
/// assertion: it returns as soon as the condition holds; the generous bound only matters when
/// the 2-core machine is saturated by other suites running in parallel.
public func eventually(_ seconds: Double = 60, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

/// Collects what a listener delivers, for assertions from the test.
public final class Recorder<T: Sendable>: Sendable {
    private let state = Mutex<[Result<T, DocError>]>([])

    public init() {}

    public func record(_ result: Result<T, DocError>) { state.withLock { $0.append(result) } }

    public var events: [Result<T, DocError>] { state.withLock { $0 } }
    public var values: [T] { events.compactMap { try? $0.get() } }
    public var count: Int { state.withLock { $0.count } }
    public var last: T? { values.last }
    public var errors: [DocError] { events.compactMap { if case .failure(let e) = $0 { return e } else { return nil } } }
}
