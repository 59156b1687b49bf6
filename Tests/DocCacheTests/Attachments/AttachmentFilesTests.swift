import DocModel
import Foundation
import Testing
@testable import DocCache

/// Reading an attachment's file at an offset: the uploader reads from the offset the server
/// confirmed, so a bad offset must be an error, not a trap.
@Suite struct AttachmentFilesTests {
    @Test func readsFromAnOffsetAndRefusesANegativeOne() throws {
        let root = NSTemporaryDirectory() + "attachment-files-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let files = AttachmentFiles(storeDirectory: root)
        try FileManager.default.createDirectory(atPath: files.directory, withIntermediateDirectories: true)
        let (id, size) = try files.importBytes(Array(0..<100), maxBytes: 1_000)
        #expect(size == 100)
        #expect(try files.read(id, offset: 90, count: 20) == Array(90..<100))
        #expect(try files.read(id, offset: 100, count: 20).isEmpty)
        let error = #expect(throws: DocError.self) { try files.read(id, offset: -1, count: 20) }
        #expect(error?.code == .internal)
    }
}
