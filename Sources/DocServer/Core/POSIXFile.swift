#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// The POSIX file calls the blob store, backups and the development secret share. They report
/// `errno` and leave the `DocError` to the caller (each maps failures its own way:
/// ``BlobFile/failure(_:_:errno:)``, ``BackupFiles/failure(_:_:errno:)``).
enum POSIXFile {
    /// The names in the directory at `path`, without `.` and `..`; `nil` when it cannot be
    /// opened (`errno` says why).
    static func names(in path: String) -> [String]? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Creates `path` and its missing parents (mode 0700); on failure, the directory that
    /// could not be created and the `errno`.
    static func makeDirectories(_ path: String) -> (directory: String, errno: Int32)? {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o700) != 0 && errno != EEXIST { return (current, errno) }
        }
        return nil
    }

    /// Writes all of `bytes` to `fd`, at `offset` (`pwrite`) or at the file's position
    /// (`nil`), retrying interrupted calls; the `errno` of a failure.
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32, at offset: Int64? = nil) -> Int32? {
        var done = 0
        while done < bytes.count {
            let rest = bytes.count - done
            let n: Int
            if let offset {
                n = pwrite(fd, bytes.baseAddress! + done, rest, off_t(offset) + off_t(done))
            } else {
                #if canImport(Darwin)
                n = Darwin.write(fd, bytes.baseAddress! + done, rest)
                #elseif canImport(Musl)
                n = Musl.write(fd, bytes.baseAddress! + done, rest)
                #else
                n = Glibc.write(fd, bytes.baseAddress! + done, rest)
                #endif
            }
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return nil
    }

    /// Reads once into `buffer` (at `offset` with `pread`, else at the file position), again
    /// when interrupted: the number of bytes read (0 at the end of the file), or the `errno`
    /// of a failure.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64? = nil) -> (count: Int, errno: Int32?) {
        while true {
            let n: Int
            if let offset {
                n = pread(fd, buffer.baseAddress!, buffer.count, off_t(offset))
            } else {
                #if canImport(Darwin)
                n = Darwin.read(fd, buffer.baseAddress!, buffer.count)
                #elseif canImport(Musl)
                n = Musl.read(fd, buffer.baseAddress!, buffer.count)
                #else
                n = Glibc.read(fd, buffer.baseAddress!, buffer.count)
                #endif
            }
            if n >= 0 { return (n, nil) }
            if errno != EINTR { return (0, errno) }
        }
    }

    /// The directory part of `path` (`.` for a bare name, `/` for a name in the root).
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// Closes `fd`, ignoring the result.
    static func close(_ fd: Int32) {
        #if canImport(Darwin)
        _ = Darwin.close(fd)
        #elseif canImport(Musl)
        _ = Musl.close(fd)
        #else
        _ = Glibc.close(fd)
        #endif
    }
}
