import Foundation
import Synchronization
@testable import DocCache

/// A fresh directory per test, removed afterwards.
struct TemporaryDirectory: ~Copyable {
    let path: String

    init(_ label: String = "store") {
        path = NSTemporaryDirectory() + "doccache-\(label)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Collects what a listener delivers. Deliveries happen on the store's executor before the
/// write that caused them returns, so a test can inspect `events` right after awaiting a write.
final class Recorder<T: Sendable>: Sendable {
    private let state = Mutex<[Result<T, DocError>]>([])

    func record(_ result: Result<T, DocError>) { state.withLock { $0.append(result) } }

    var events: [Result<T, DocError>] { state.withLock { $0 } }
    var values: [T] { events.compactMap { try? $0.get() } }
    var count: Int { state.withLock { $0.count } }
    var last: T? { values.last }
}

extension QuerySnapshot {
    var ids: [String] { documents.map(\.documentID) }
    var changeSummary: [String] {
        documentChanges.map { "\($0.type.rawValue) \($0.document.documentID) \($0.oldIndex)->\($0.newIndex)" }
    }
}

/// Polls `condition` (async) until it holds or `seconds` pass. A liveness check, not a timing
/// assertion: it returns as soon as the condition holds; the generous bound only matters when
/// the 2-core machine is saturated by other suites running in parallel.
func eventually(_ seconds: Double = 60, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}
