import Crypto
import DocModel
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The files of a store's attachments: `<store>/attachments/<id>`, each written under a
/// temporary name, flushed to disk and renamed into place, so a crash never leaves a partial
/// file under an attachment's name. Blocking file I/O: called off the engine's actor.
package struct AttachmentFiles: Sendable {
    /// `<store>/attachments`.
    package let directory: String
    /// How much is read or written at a time.
    static let chunkBytes = 1 << 20

    package init(storeDirectory: String) {
        directory = storeDirectory + "/attachments"
    }

    /// The file of attachment `id`.
    package func path(of id: AttachmentID) -> String { directory + "/" + id.hex }

    /// Whether the file of `id` is there.
    package func exists(_ id: AttachmentID) -> Bool { FileManager.default.fileExists(atPath: path(of: id)) }

    /// Copies `source` into the folder, hashing it on the way, and makes it durable under its
    /// id. Returns the id and the size.
    ///
    /// - Throws: `notFound` for a missing file, `permissionDenied` for an unreadable one,
    ///   `invalidArgument` for a directory, an empty file or one over `maxBytes`, `internal`
    ///   when the copy cannot be written. Nothing is left behind on failure.
    package func importFile(_ source: String, maxBytes: Int64) throws(DocError) -> (AttachmentID, Int64) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory) else {
            throw DocError(.notFound, "no file at \(source)")
        }
        guard !isDirectory.boolValue else { throw DocError(.invalidArgument, "\(source) is a directory, not a file") }
        guard let input = FileHandle(forReadingAtPath: source) else {
            throw DocError(.permissionDenied, "cannot read \(source) (check its permissions)")
        }
        defer { try? input.close() }
        return try write(maxBytes: maxBytes, what: source) { () throws(DocError) -> [UInt8]? in
            do {
                guard let chunk = try input.read(upToCount: Self.chunkBytes), !chunk.isEmpty else { return nil }
                return [UInt8](chunk)
            } catch {
                throw DocError(.permissionDenied, "cannot read \(source): \(error)")
            }
        }
    }

    /// Stores `bytes` durably under their id. Same errors as ``importFile(_:maxBytes:)``.
    package func importBytes(_ bytes: [UInt8], maxBytes: Int64) throws(DocError) -> (AttachmentID, Int64) {
        var offset = 0
        return try write(maxBytes: maxBytes, what: "the data") { () throws(DocError) -> [UInt8]? in
            guard offset < bytes.count else { return nil }
            let end = min(bytes.count, offset + Self.chunkBytes)
            defer { offset = end }
            return Array(bytes[offset..<end])
        }
    }

    /// Writes the chunks `next` returns to a temporary file, then renames it to its hash.
    private func write(maxBytes: Int64, what: String, _ next: () throws(DocError) -> [UInt8]?) throws(DocError) -> (AttachmentID, Int64) {
        try createDirectory()
        let temporary = directory + "/.incoming-" + UUID().uuidString
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
              let output = FileHandle(forWritingAtPath: temporary)
        else { throw DocError(.internal, "cannot create \(temporary)") }
        var keep = false
        defer {
            try? output.close()
            if !keep { try? FileManager.default.removeItem(atPath: temporary) }
        }
        var hasher = SHA256()
        var size: Int64 = 0
        while let chunk = try next() {
            size += Int64(chunk.count)
            guard size <= maxBytes else {
                throw DocError(.invalidArgument, "\(what) is larger than the attachment limit of \(maxBytes) bytes")
            }
            hasher.update(data: chunk)
            do { try output.write(contentsOf: chunk) } catch { throw DocError(.internal, "cannot write \(temporary): \(error)") }
        }
        guard size > 0 else { throw DocError(.invalidArgument, "\(what) is empty: an attachment needs at least one byte") }
        do { try output.synchronize() } catch { throw DocError(.internal, "cannot flush \(temporary): \(error)") }
        let id = AttachmentID(digest: hasher.finalize())
        let final = path(of: id)
        guard rename(temporary, final) == 0 else {
            throw DocError(.internal, "cannot move \(temporary) to \(final) (errno \(errno))")
        }
        keep = true
        syncDirectory()
        return (id, size)
    }

    /// Writes downloaded bytes at `offset` of a partial download of `id`.
    package func appendDownload(_ bytes: [UInt8], to id: AttachmentID) throws(DocError) {
        try createDirectory()
        let partial = partialPath(of: id)
        if !FileManager.default.fileExists(atPath: partial) { FileManager.default.createFile(atPath: partial, contents: nil) }
        guard let output = FileHandle(forWritingAtPath: partial) else { throw DocError(.internal, "cannot open \(partial)") }
        defer { try? output.close() }
        do {
            try output.seekToEnd()
            try output.write(contentsOf: bytes)
        } catch {
            throw DocError(.internal, "cannot write \(partial): \(error)")
        }
    }

    /// The bytes of a partial download of `id` so far.
    package func partialSize(of id: AttachmentID) -> Int64 {
        (try? FileManager.default.attributesOfItem(atPath: partialPath(of: id))[.size] as? Int64) ?? 0
    }

    /// Checks a complete download against its id and moves it into place.
    ///
    /// - Throws: `dataLoss` when the bytes do not hash to `id` (the partial file is removed).
    package func finishDownload(of id: AttachmentID) throws(DocError) {
        let partial = partialPath(of: id)
        guard let input = FileHandle(forReadingAtPath: partial) else { throw DocError(.internal, "cannot read \(partial)") }
        defer { try? input.close() }
        var hasher = SHA256()
        do {
            while let chunk = try input.read(upToCount: Self.chunkBytes), !chunk.isEmpty { hasher.update(data: chunk) }
        } catch {
            throw DocError(.internal, "cannot read \(partial): \(error)")
        }
        guard AttachmentID(digest: hasher.finalize()) == id else {
            try? FileManager.default.removeItem(atPath: partial)
            throw DocError(.dataLoss, "the downloaded bytes of attachment \(id) do not match its SHA-256; the download is discarded")
        }
        try? input.synchronize()
        guard rename(partial, path(of: id)) == 0 else { throw DocError(.internal, "cannot move \(partial) into place (errno \(errno))") }
        syncDirectory()
    }

    /// Reads up to `count` bytes of attachment `id` from `offset`.
    package func read(_ id: AttachmentID, offset: Int64, count: Int) throws(DocError) -> [UInt8] {
        guard offset >= 0 else { throw DocError(.internal, "cannot read attachment \(id) from offset \(offset)") }
        guard let input = FileHandle(forReadingAtPath: path(of: id)) else {
            throw DocError(.dataLoss, "the file of attachment \(id) is missing from \(directory)")
        }
        defer { try? input.close() }
        do {
            try input.seek(toOffset: UInt64(offset))
            return [UInt8](try input.read(upToCount: count) ?? Data())
        } catch {
            throw DocError(.internal, "cannot read attachment \(id): \(error)")
        }
    }

    /// Removes the file of `id` (and any partial download of it).
    package func remove(_ id: AttachmentID) {
        try? FileManager.default.removeItem(atPath: path(of: id))
        try? FileManager.default.removeItem(atPath: partialPath(of: id))
    }

    /// Removes leftovers of interrupted imports (temporary files) and files without a record.
    package func removeOrphans(keeping ids: Set<AttachmentID>) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names {
            if name.hasPrefix(".incoming-") || (AttachmentID.isValid(name) && !ids.contains(try! AttachmentID(name))) {
                try? FileManager.default.removeItem(atPath: directory + "/" + name)
            }
        }
    }

    private func partialPath(of id: AttachmentID) -> String { directory + "/.download-" + id.hex }

    private func createDirectory() throws(DocError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw DocError(.internal, "cannot create \(directory): \(error)")
        }
    }

    /// Makes a rename in the folder durable.
    private func syncDirectory() {
        let fd = open(directory, O_RDONLY)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        _ = close(fd)
    }
}
