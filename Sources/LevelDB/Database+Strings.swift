/// Conveniences for string keys and values, stored as their UTF-8 bytes.
extension Database {
    /// The value stored under the UTF-8 bytes of `key`, decoded as UTF-8 (invalid sequences are
    /// replaced with U+FFFD), or `nil` if there is none.
    public func get(_ key: String, options: ReadOptions = ReadOptions()) throws(LevelDBError) -> String? {
        try get(Array(key.utf8), options: options).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Stores the UTF-8 bytes of `value` under the UTF-8 bytes of `key`.
    public func put(_ key: String, _ value: String, options: WriteOptions = WriteOptions()) throws(LevelDBError) {
        try put(Array(key.utf8), Array(value.utf8), options: options)
    }

    /// Removes the UTF-8 bytes of `key`.
    public func delete(_ key: String, options: WriteOptions = WriteOptions()) throws(LevelDBError) {
        try delete(Array(key.utf8), options: options)
    }
}
