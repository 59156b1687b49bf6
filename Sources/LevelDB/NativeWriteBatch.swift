import CLevelDB

/// A LevelDB write batch (`leveldb_writebatch_t`) filled in place by
/// ``Database/write(options:_:)``: each put or delete is copied into LevelDB's own buffer as
/// it is made, with no list of operations in between. For writers that build a batch and
/// commit it at once (a ``WriteBatch`` is the value to keep and pass around).
///
/// Non-copyable and only lent to the closure that fills it, so it cannot outlive the write.
package struct NativeWriteBatch: ~Copyable {
    let pointer: OpaquePointer

    /// Adds a put of `value` under `key`.
    package mutating func put(_ key: [UInt8], _ value: [UInt8]) {
        let batch = pointer
        key.withCBytes { keyPointer, keyLength in
            value.withCBytes { valuePointer, valueLength in
                leveldb_writebatch_put(batch, keyPointer, keyLength, valuePointer, valueLength)
            }
        }
    }

    /// Adds a delete of `key`.
    package mutating func delete(_ key: [UInt8]) {
        let batch = pointer
        key.withCBytes { keyPointer, keyLength in leveldb_writebatch_delete(batch, keyPointer, keyLength) }
    }
}

extension Database {
    /// Applies the puts and deletes that `fill` adds to a native batch atomically, in order
    /// (see ``write(_:options:)``). A batch left empty writes nothing.
    package func write(options: WriteOptions = WriteOptions(), _ fill: (inout NativeWriteBatch) -> Void) throws(LevelDBError) {
        guard let pointer = leveldb_writebatch_create() else {
            throw LevelDBError(.unknown, "leveldb_writebatch_create returned NULL", path: path)
        }
        defer { leveldb_writebatch_destroy(pointer) }
        var batch = NativeWriteBatch(pointer: pointer)
        fill(&batch)
        try withWriteOptions(options) { handle, writeOptions throws(LevelDBError) in
            try callLevelDB(path: path) { error in
                leveldb_write(handle, writeOptions, pointer, error)
            }
        }
    }
}
