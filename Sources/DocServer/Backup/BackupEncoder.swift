internal import Crypto

/// Writes the backup format (``BackupFormat``) piece by piece: the header at creation, then
/// records, then the trailer; the caller takes the bytes produced so far with ``take()`` and
/// writes them wherever the backup goes (a file, a socket), so nothing accumulates.
struct BackupEncoder {
    private var hasher = SHA256()
    private var pending: [UInt8] = []
    /// Records appended so far.
    private(set) var records = 0
    /// Bytes produced so far (taken or not).
    private(set) var bytes: Int64 = 0

    init(header: BackupHeader) {
        var start = BackupFormat.magic
        start.appendBigEndian(BackupFormat.version)
        let json = header.json
        start.appendBigEndian(UInt32(json.count))
        start += json
        emit(start)
    }

    /// Bytes produced and not yet taken.
    var pendingCount: Int { pending.count }

    /// One key and its value.
    mutating func append(key: [UInt8], value: [UInt8]) {
        var record: [UInt8] = [BackupFormat.entryTag]
        record.reserveCapacity(9 + key.count + value.count)
        record.appendBigEndian(UInt32(key.count))
        record += key
        record.appendBigEndian(UInt32(value.count))
        record += value
        emit(record)
        records += 1
    }

    /// The trailer: the record count and the checksum of everything before the checksum.
    mutating func finish() {
        var trailer: [UInt8] = [BackupFormat.endTag]
        trailer.appendBigEndian(UInt64(records))
        emit(trailer)
        let digest = Array(hasher.finalize())
        pending += digest
        bytes += Int64(digest.count)
    }

    /// Ends the backup with an error record instead of the trailer: a reader refuses the file
    /// and reports `message`.
    mutating func fail(_ message: String) {
        let text = Array(message.utf8.prefix(BackupFormat.maxErrorBytes))
        var record: [UInt8] = [BackupFormat.errorTag]
        record.appendBigEndian(UInt32(text.count))
        record += text
        emit(record)
    }

    /// The bytes produced since the last call.
    mutating func take() -> [UInt8] {
        defer { pending = [] }
        return pending
    }

    private mutating func emit(_ part: [UInt8]) {
        hasher.update(data: part)
        pending += part
        bytes += Int64(part.count)
    }
}
