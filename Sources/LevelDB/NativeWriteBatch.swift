import CLevelDB

/// A LevelDB write batch (`leveldb_writebatch_t`) that puts and deletes are copied into as
/// they are made, with no list of operations in between, and that `Database.write(_:options:)`
/// commits. For writers inside this package that build a batch and commit it at once (a
/// ``WriteBatch`` is the value to keep and pass around).
///
/// ``clear()`` keeps LevelDB's buffer, so a writer that commits often can reuse one batch
/// and skip its allocation and growth on every commit. Non-copyable: it owns the C object,
/// which is destroyed with it.
package struct NativeWriteBatch: ~Copyable {
    let pointer: OpaquePointer
    /// The bytes of the keys and values added since the batch was created or cleared.
    package private(set) var byteCount = 0

    /// Creates an empty batch.
    package init() {
        // leveldb_writebatch_create is `new WriteBatch`: it fails only when memory is
        // exhausted, which Swift treats as fatal everywhere else too.
        guard let pointer = leveldb_writebatch_create() else { fatalError("leveldb_writebatch_create returned NULL") }
        self.pointer = pointer
    }

    deinit {
        leveldb_writebatch_destroy(pointer)
    }

    /// Adds a put of `value` under `key`.
    package mutating func put(_ key: [UInt8], _ value: [UInt8]) {
        let batch = pointer
        key.withCBytes { keyPointer, keyLength in
            value.withCBytes { valuePointer, valueLength in
                leveldb_writebatch_put(batch, keyPointer, keyLength, valuePointer, valueLength)
            }
        }
        byteCount += key.count + value.count
    }

    /// Adds a delete of `key`.
    package mutating func delete(_ key: [UInt8]) {
        let batch = pointer
        key.withCBytes { keyPointer, keyLength in leveldb_writebatch_delete(batch, keyPointer, keyLength) }
        byteCount += key.count
    }

    /// Removes every operation, keeping the buffer for the next ones.
    package mutating func clear() {
        leveldb_writebatch_clear(pointer)
        byteCount = 0
    }
}

extension Database {
    /// Applies the operations of `batch` atomically, in order, as the public `write` of a
    /// ``WriteBatch`` does. An empty batch writes nothing. The batch is left as it is (clear it to reuse it).
    package func write(_ batch: borrowing NativeWriteBatch, options: WriteOptions = WriteOptions()) throws(LevelDBError) {
        let pointer = batch.pointer
        try withWriteOptions(options) { handle, writeOptions throws(LevelDBError) in
            try callLevelDB(path: path) { error in
                leveldb_write(handle, writeOptions, pointer, error)
            }
        }
    }
}
