import Foundation

/// Runs `body` on a thread of its own and returns what it returns (or throws what it throws).
///
/// For blocking calls made from async tests: a tool that runs for seconds (`initdb`,
/// `pg_ctl`, `createdb`) then holds no thread of the cooperative pool, which has only two on
/// these machines and serves every test running in parallel. A pool blocked that way stalled
/// the other tests' awaits for tens of seconds and tripped their liveness caps.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try body() })
        }
    }
}
