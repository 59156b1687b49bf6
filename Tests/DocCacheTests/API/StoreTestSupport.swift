import DocTestSupport
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

extension QuerySnapshot {
    var ids: [String] { documents.map(\.documentID) }
    var changeSummary: [String] {
        documentChanges.map { "\($0.type.rawValue) \($0.document.documentID) \($0.oldIndex)->\($0.newIndex)" }
    }
}
