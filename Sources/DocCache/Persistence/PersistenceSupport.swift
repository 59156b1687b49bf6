internal import DocModel
internal import LevelDB

#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

// Small helpers of the persistence layer: LevelDB error mapping, byte comparison, the file
// system (directory creation) and client ids.

extension LevelDBError {
    /// The ``DocError`` for this LevelDB failure while doing `operation` on the store in
    /// `directory`. The message keeps LevelDB's own words and names the directory.
    ///
    /// - `locked` → `failedPrecondition`: the store is already open by another process or
    ///   another store in this process.
    /// - `corruption` → `dataLoss`; `ioError` → `internal`; `notFound` → `notFound`;
    ///   `invalidArgument` → `invalidArgument`; `closed` → `failedPrecondition`;
    ///   `notSupported` → `unimplemented`; anything else → `unknown`.
    func docError(directory: String, operation: String) -> DocError {
        let code: DocError.Code
        let text: String
        switch self.code {
        case .locked:
            code = .failedPrecondition
            text = "cannot \(operation) the store: it is already open by another process or store (\(message))"
        case .corruption:
            code = .dataLoss
            text = "cannot \(operation) the store: LevelDB found corrupt data (\(message))"
        case .ioError:
            code = .internal
            text = "cannot \(operation) the store: LevelDB I/O error (\(message))"
        case .notFound:
            code = .notFound
            text = "cannot \(operation) the store: \(message)"
        case .invalidArgument, .alreadyExists:
            code = .invalidArgument
            text = "cannot \(operation) the store: \(message)"
        case .closed:
            code = .failedPrecondition
            text = "cannot \(operation) the store: it is closed (\(message))"
        case .notSupported:
            code = .unimplemented
            text = "cannot \(operation) the store: \(message)"
        default:
            code = .unknown
            text = "cannot \(operation) the store: LevelDB error (\(message))"
        }
        return DocError(code, text, at: directory)
    }
}

/// Runs a LevelDB call, turning its error into a ``DocError`` about the store in `directory`.
@inline(__always)
func withLevelDB<T>(
    _ directory: String, _ operation: @autoclosure () -> String, _ body: () throws(LevelDBError) -> T
) throws(DocError) -> T {
    do {
        return try body()
    } catch {
        throw error.docError(directory: directory, operation: operation())
    }
}

/// Bytewise (memcmp) comparison of two keys, LevelDB's order: -1, 0 or 1.
@inline(__always)
func compareKeys(_ a: [UInt8], _ b: [UInt8]) -> Int {
    compareKeys(a[...], b[...])
}

/// ``compareKeys(_:_:)`` of parts of keys.
@inline(__always)
func compareKeys(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Int {
    a.withUnsafeBufferPointer { pa in
        b.withUnsafeBufferPointer { pb in
            let n = min(pa.count, pb.count)
            if n > 0 {
                let c = memcmp(pa.baseAddress!, pb.baseAddress!, n)
                if c != 0 { return c < 0 ? -1 : 1 }
            }
            return pa.count == pb.count ? 0 : (pa.count < pb.count ? -1 : 1)
        }
    }
}

/// File-system operations of the persistence layer.
enum FileSystem {
    /// Creates `path` and its missing parents (`mkdir -p`), with mode 0755.
    static func createDirectories(_ path: String) throws(DocError) {
        guard !path.isEmpty else { throw DocError(.invalidArgument, "the store directory path is empty") }
        // A store is usually opened again: one stat instead of a mkdir per path component.
        var status = stat()
        if stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR { return }
        var current = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            current += "/" + part
            if mkdir(current, 0o755) != 0 {
                let code = errno
                if code == EEXIST { continue }
                throw DocError(
                    .internal, "cannot create the store directory: \(String(cString: strerror(code)))", at: current)
            }
        }
    }

    /// Whether `path` exists (any kind of file).
    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }
}

/// A random (version 4) UUID in its lowercase text form, e.g.
/// `"3f2b8c1e-9a4d-4e7f-b2c1-0d9e8f7a6b5c"`: the store's client id.
func randomUUIDString() -> String {
    var generator = SystemRandomNumberGenerator()
    var bytes = [UInt8](repeating: 0, count: 16)
    for i in 0..<16 { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
    bytes[6] = (bytes[6] & 0x0F) | 0x40  // version 4
    bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 4122 variant
    let hex = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(36)
    for (i, b) in bytes.enumerated() {
        if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
        out.append(hex[Int(b >> 4)])
        out.append(hex[Int(b & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}
