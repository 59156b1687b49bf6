import CLevelDB

/// The `char** errptr` argument of LevelDB's C functions.
typealias ErrorPointer = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

/// Calls a LevelDB C function that reports failure through a `char** errptr`.
///
/// The error pointer starts as `NULL`; if LevelDB set it, its message is copied into a thrown
/// ``LevelDBError`` (about the database at `path`) and the C string is freed with
/// `leveldb_free`.
func callLevelDB<R>(path: String?, _ body: (ErrorPointer) -> R) throws(LevelDBError) -> R {
    var error: UnsafeMutablePointer<CChar>? = nil
    let result = withUnsafeMutablePointer(to: &error) { body($0) }
    if let error {
        let message = String(cString: error)
        leveldb_free(error)
        throw LevelDBError(levelDBMessage: message, path: path)
    }
    return result
}

/// Takes ownership of a `malloc`ed buffer returned by LevelDB: copies `count` bytes out and
/// frees the buffer with `leveldb_free`.
func takeBytes(_ pointer: UnsafeMutablePointer<CChar>, count: Int) -> [UInt8] {
    defer { leveldb_free(pointer) }
    return copyBytes(pointer, count: count)
}

/// Copies `count` bytes that LevelDB owns (an iterator's key or value) into an array.
func copyBytes(_ pointer: UnsafePointer<CChar>, count: Int) -> [UInt8] {
    guard count > 0 else { return [] }
    return Array(UnsafeRawBufferPointer(start: pointer, count: count))
}

/// Takes ownership of a `malloc`ed NUL-terminated string returned by LevelDB.
func takeString(_ pointer: UnsafeMutablePointer<CChar>) -> String {
    defer { leveldb_free(pointer) }
    return String(cString: pointer)
}

extension Array where Element == UInt8 {
    /// Calls `body` with a `const char*` and length for these bytes. The pointer is never
    /// `NULL`, even for an empty array (LevelDB's C API requires non-`NULL` pointers).
    func withCBytes<R>(_ body: (UnsafePointer<CChar>, Int) -> R) -> R {
        withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress, buffer.count > 0 {
                return UnsafeRawPointer(base).withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    body($0, buffer.count)
                }
            }
            var empty: CChar = 0
            return withUnsafePointer(to: &empty) { body($0, 0) }
        }
    }
}

/// Calls `body` with `const char*` pointers and lengths for several byte strings at once (for
/// `leveldb_approximate_sizes`). All pointers stay valid for the duration of `body`.
func withCByteArrays<R>(
    _ arrays: [[UInt8]],
    _ body: (_ pointers: [UnsafePointer<CChar>], _ lengths: [Int]) -> R
) -> R {
    // One contiguous buffer (plus a byte so it is never empty) holds every array.
    var storage: [UInt8] = arrays.flatMap { $0 }
    storage.append(0)
    return storage.withUnsafeBufferPointer { buffer -> R in
        guard let base = buffer.baseAddress else { return body([], []) }
        let chars = UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)
        var pointers: [UnsafePointer<CChar>] = []
        var lengths: [Int] = []
        pointers.reserveCapacity(arrays.count)
        lengths.reserveCapacity(arrays.count)
        var offset = 0
        for array in arrays {
            pointers.append(chars + offset)
            lengths.append(array.count)
            offset += array.count
        }
        return body(pointers, lengths)
    }
}

/// LevelDB's `uint8_t` booleans.
extension Bool {
    var cBool: UInt8 { self ? 1 : 0 }
}
