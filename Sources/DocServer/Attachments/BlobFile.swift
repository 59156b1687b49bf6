#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import DocModel
internal import NIOCore

/// The POSIX calls ``FileBlobStore`` is made of. Every failure is a ``DocError`` naming the
/// operation, the path and the system's reason; all calls block (run them through
/// ``BlockingIO``).
enum BlobFile {
    /// The error of a failed system call: `resourceExhausted` for a full disk or quota,
    /// `unavailable` otherwise (the store may work again later).
    static func failure(_ operation: String, _ path: String, errno code: Int32 = errno) -> DocError {
        let reason = String(cString: strerror(code))
        let kind: DocError.Code = (code == ENOSPC || code == EDQUOT) ? .resourceExhausted : .unavailable
        return DocError(kind, "cannot \(operation) \(path): \(reason)", at: "attachment store")
    }

    /// Creates `path` and its missing parents (mode 0700).
    static func makeDirectories(_ path: String) throws(DocError) {
        if let (directory, code) = POSIXFile.makeDirectories(path) { throw failure("create the directory", directory, errno: code) }
    }

    /// Opens `path` for writing (created with mode 0600 when `create`).
    static func openForWriting(_ path: String, create: Bool) throws(DocError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CLOEXEC | (create ? O_CREAT : 0), 0o600)
        guard fd >= 0 else { throw failure("open", path) }
        return fd
    }

    /// Opens `path` for reading; `nil` when it does not exist.
    static func openForReading(_ path: String) throws(DocError) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw failure("open", path)
        }
        return fd
    }

    /// The size of the file at `path`; `nil` when it does not exist.
    static func size(_ path: String) throws(DocError) -> Int64? {
        var info = stat()
        if stat(path, &info) != 0 {
            if errno == ENOENT { return nil }
            throw failure("read the size of", path)
        }
        return Int64(info.st_size)
    }

    /// The size of the open file `fd`.
    static func size(fd: Int32, path: String) throws(DocError) -> Int64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure("read the size of", path) }
        return Int64(info.st_size)
    }

    /// Writes all of `bytes` at `offset`.
    static func write(_ bytes: ByteBuffer, to fd: Int32, at offset: Int64, path: String) throws(DocError) {
        if let code = bytes.withUnsafeReadableBytes({ POSIXFile.writeAll($0, to: fd, at: offset) }) { throw failure("write", path, errno: code) }
    }

    /// Up to `count` bytes at `offset` (fewer only at the end of the file; empty past it).
    static func read(_ fd: Int32, at offset: Int64, count: Int, path: String) throws(DocError) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        var code: Int32?
        var total = 0
        while total < count {
            let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - total) { raw -> Int in
                let read = POSIXFile.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[..<(count - total)]), at: offset + Int64(total))
                code = read.errno
                return read.count
            }
            if code != nil || n == 0 { break }
            total += n
        }
        if let code { throw failure("read", path, errno: code) }
        return buffer
    }

    /// Flushes `fd`'s data and size to stable storage.
    static func sync(_ fd: Int32, path: String) throws(DocError) {
        guard fsync(fd) == 0 else { throw failure("sync", path) }
    }

    /// Flushes the directory `path` (its entries: a rename or a new file in it) to stable storage.
    static func syncDirectory(_ path: String) throws(DocError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY)
        guard fd >= 0 else { throw failure("open the directory", path) }
        defer { _ = close(fd) }
        guard fsync(fd) == 0 else { throw failure("sync the directory", path) }
    }

    /// Sets the size of `fd` to `size` (dropping what is beyond).
    static func truncate(_ fd: Int32, to size: Int64, path: String) throws(DocError) {
        guard ftruncate(fd, off_t(size)) == 0 else { throw failure("truncate", path) }
    }

    /// Renames `from` to `to`, replacing `to` atomically.
    static func move(_ from: String, to: String) throws(DocError) {
        guard rename(from, to) == 0 else { throw failure("rename \(from) to", to) }
    }

    /// Removes the file `path`; a missing file is not an error.
    static func remove(_ path: String) throws(DocError) {
        if unlink(path) != 0 && errno != ENOENT { throw failure("remove", path) }
    }

    /// The whole content of a small file (metadata), or `nil` when it does not exist.
    ///
    /// - Throws: `dataLoss` when it is larger than `limit`.
    static func readSmallFile(_ path: String, limit: Int = 64 * 1024) throws(DocError) -> [UInt8]? {
        guard let fd = try openForReading(path) else { return nil }
        defer { _ = close(fd) }
        let buffer = try read(fd, at: 0, count: limit + 1, path: path)
        guard buffer.readableBytes <= limit else {
            throw DocError(.dataLoss, "\(path) is larger than \(limit) bytes: it is not attachment metadata",
                           at: "attachment store")
        }
        return Array(buffer.readableBytesView)
    }

    /// Replaces the file `path` with `bytes` atomically and durably: a temporary file beside
    /// it, synced, renamed over it, and the directory synced.
    static func writeAtomically(_ bytes: [UInt8], to path: String, directory: String) throws(DocError) {
        let temporary = path + FileBlobLayout.temporarySuffix
        let fd = try openForWriting(temporary, create: true)
        do throws(DocError) {
            try truncate(fd, to: 0, path: temporary)
            try write(ByteBuffer(bytes: bytes), to: fd, at: 0, path: temporary)
            try sync(fd, path: temporary)
        } catch {
            _ = close(fd)
            try? remove(temporary)
            throw error
        }
        _ = close(fd)
        try move(temporary, to: path)
        try syncDirectory(directory)
    }

    /// The names in the directory `path` (without `.` and `..`); empty when it does not exist.
    static func list(_ path: String) throws(DocError) -> [String] {
        guard let names = POSIXFile.names(in: path) else {
            if errno == ENOENT { return [] }
            throw failure("list", path)
        }
        return names
    }
}
