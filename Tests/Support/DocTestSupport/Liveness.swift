public import DocModel
import Synchronization

/// The liveness cap of the tests, in seconds: `eventually`'s default, and the bound of other
/// waits that must only end a test which would otherwise never end (docs/testing.md).
public let livenessCap: Double = 300

/// Polls `condition` until it holds or `seconds` pass. A liveness check, not a timing
/// assertion: it returns as soon as the condition holds. The bound only matters when the test
/// fails, or when the 2-core machine is saturated: `swift test` starts every test at once,
/// and in the first minute of a full run a call that takes milliseconds alone was answered
/// after more than 60 s (the default was 60 s then; CI failed on it). Hence ``livenessCap``.
public func eventually(_ seconds: Double = livenessCap, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    // A cancelled test stops polling at once (its sleeps would return at once too).
    while ContinuousClock.now < deadline && !Task.isCancelled {
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
