#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import DocModel

/// The POSIX calls backups and restores are made of. Every failure is a ``DocError`` naming
/// the operation, the path and the system's reason.
enum BackupFiles {
    /// The error of a failed system call: `resourceExhausted` for a full disk or quota,
    /// `notFound` for a missing path, `permissionDenied`, or `internal` (an I/O error, a
    /// read-only file system …).
    static func failure(_ operation: String, _ path: String, errno code: Int32 = errno) -> DocError {
        let reason = String(cString: strerror(code))
        let kind: DocError.Code
        switch code {
        case ENOSPC, EDQUOT: kind = .resourceExhausted
        case ENOENT, ENOTDIR: kind = .notFound
        case EACCES, EPERM: kind = .permissionDenied
        default: kind = .internal
        }
        return DocError(kind, "cannot \(operation) \(path): \(reason)")
    }

    /// What is at `path`.
    enum Kind { case missing, file, directory, other }

    static func kind(_ path: String, followingLinks: Bool = true) -> Kind {
        var info = stat()
        guard (followingLinks ? stat(path, &info) : lstat(path, &info)) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    /// The names in the directory at `path` (without `.` and `..`).
    static func entries(_ path: String) throws(DocError) -> [String] {
        guard let names = POSIXFile.names(in: path) else { throw failure("list", path) }
        return names
    }

    /// The last component of `path`.
    static func name(of path: String) -> String {
        var trimmed = path
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        return trimmed.split(separator: "/").last.map(String.init) ?? trimmed
    }

    /// Creates `path` and its missing parents (mode 0700).
    static func makeDirectories(_ path: String) throws(DocError) {
        if let (directory, code) = POSIXFile.makeDirectories(path) { throw failure("create the directory", directory, errno: code) }
    }

    /// Creates (or truncates) `path` for writing, mode 0600.
    static func create(_ path: String) throws(DocError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("create", path) }
        return fd
    }

    /// Opens `path` for reading.
    static func openForReading(_ path: String) throws(DocError) -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open", path) }
        return fd
    }

    /// Writes all of `bytes` to `fd`.
    static func write(_ bytes: [UInt8], to fd: Int32, path: String) throws(DocError) {
        if let code = bytes.withUnsafeBytes({ POSIXFile.writeAll($0, to: fd) }) { throw failure("write", path, errno: code) }
    }

    /// Reads up to `count` bytes from `fd`; empty at the end of the file.
    static func read(_ fd: Int32, count: Int, path: String) throws(DocError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let (n, code) = buffer.withUnsafeMutableBytes { POSIXFile.read(fd, into: $0) }
        if let code { throw failure("read", path, errno: code) }
        buffer.removeSubrange(n...)
        return buffer
    }

    /// Flushes `fd` to stable storage.
    static func sync(_ fd: Int32, path: String) throws(DocError) {
        guard fsync(fd) == 0 else { throw failure("flush", path) }
    }

    /// Flushes the directory at `path` (a rename in it is then durable); best effort.
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        POSIXFile.close(fd)
    }

    /// Renames `from` to `to` (replacing a file, or an empty directory, at `to`).
    static func rename(_ from: String, to: String) throws(DocError) {
        #if canImport(Darwin)
        let result = Darwin.rename(from, to)
        #elseif canImport(Musl)
        let result = Musl.rename(from, to)
        #else
        let result = Glibc.rename(from, to)
        #endif
        guard result == 0 else { throw failure("rename \(from) to", to) }
    }

    /// Removes the file at `path`, if any.
    static func remove(_ path: String) {
        _ = unlink(path)
    }

    /// Removes the directory at `path` and everything in it, if it exists (no symbolic links
    /// are followed: a LevelDB directory holds plain files).
    static func removeTree(_ path: String) {
        if kind(path, followingLinks: false) == .directory {
            for name in (try? entries(path)) ?? [] { removeTree(path + "/" + name) }
            _ = rmdir(path)
        } else {
            _ = unlink(path)
        }
    }

    /// `count` random bytes as lowercase hex (names of temporary files).
    static func randomHex(_ count: Int = 6) -> String {
        (0..<count).map { _ in
            let byte = UInt8.random(in: 0...255)
            return String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
        }.joined()
    }
}
