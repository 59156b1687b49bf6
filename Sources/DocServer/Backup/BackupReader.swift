#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import Crypto
internal import DocModel

/// Reads a backup file (``BackupFormat``) front to back, checking as it goes: the magic and
/// the format version when opened, every record's framing, and at the end the record count,
/// the SHA-256 checksum and that nothing follows the trailer. A record is only trustworthy
/// once the whole file has been read: callers that act on records (a restore) read the file
/// once to verify it first.
///
/// Errors name the file and the problem: `notFound` (no such file), `invalidArgument` (not a
/// backup), `failedPrecondition` (a newer format), `dataLoss` (truncated, corrupt, checksum
/// mismatch, or a backup the server could not finish).
final class BackupReader {
    let path: String
    /// The header, read when the file is opened.
    private(set) var header = BackupHeader(layoutVersion: "", createdAt: Timestamp(microseconds: 0), tenants: [])
    /// Records read so far.
    private(set) var records = 0
    /// Bytes read so far.
    private(set) var offset: Int64 = 0

    private let fd: Int32
    private var hasher = SHA256()
    private var buffer: [UInt8] = []
    private var position = 0
    private var finished = false
    private var isOpen = true

    static let readSize = 1 << 20

    /// Opens `path` and reads its header.
    init(path: String) throws(DocError) {
        self.path = path
        switch BackupFiles.kind(path) {
        case .missing: throw DocError(.notFound, "no backup file at \(path)")
        case .directory, .other: throw DocError(.invalidArgument, "\(path) is not a file: name a backup file")
        case .file: break
        }
        fd = try BackupFiles.openForReading(path)
        do throws(DocError) {
            let magic = try? takeUnlessEnd(BackupFormat.magic.count, what: "the magic bytes")
            guard magic == BackupFormat.magic else {
                throw DocError(.invalidArgument, "\(path) is not a doccache backup (it does not start with the backup file's magic bytes)")
            }
            let version = try take(4, what: "the format version").bigEndianValue
            guard version == UInt64(BackupFormat.version) else {
                throw DocError(.failedPrecondition,
                               "\(path) is a backup of format \(version); this docctl reads format \(BackupFormat.version): use the docctl that made it, or a newer one")
            }
            let length = Int(try take(4, what: "the header's length").bigEndianValue)
            guard length <= BackupFormat.maxHeaderBytes else { throw corrupt("its header length \(length) is implausible") }
            header = try BackupHeader(json: try take(length, what: "the header"))
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    func close() {
        guard isOpen else { return }
        isOpen = false
        POSIXFile.close(fd)
    }

    /// The next key and value, or `nil` after the trailer was read and checked.
    func next() throws(DocError) -> (key: [UInt8], value: [UInt8])? {
        guard !finished else { return nil }
        let tag = try take(1, what: "record \(records + 1)")[0]
        switch tag {
        case BackupFormat.entryTag:
            let keyLength = Int(try take(4, what: "record \(records + 1)").bigEndianValue)
            guard keyLength <= BackupFormat.maxKeyBytes else { throw corrupt("record \(records + 1) has an implausible key length \(keyLength)") }
            let key = try take(keyLength, what: "record \(records + 1)")
            let valueLength = Int(try take(4, what: "record \(records + 1)").bigEndianValue)
            guard valueLength <= BackupFormat.maxValueBytes else { throw corrupt("record \(records + 1) has an implausible value length \(valueLength)") }
            let value = try take(valueLength, what: "record \(records + 1)")
            records += 1
            return (key, value)
        case BackupFormat.endTag:
            let count = try take(8, what: "the trailer").bigEndianValue
            let expected = Array(hasher.finalize())
            let digest = try take(BackupFormat.digestBytes, what: "the trailer's checksum", hashed: false)
            guard digest == expected else {
                throw DocError(.dataLoss, "the backup \(path) is corrupt: its SHA-256 checksum does not match its content")
            }
            guard count == UInt64(records) else {
                throw corrupt("its trailer counts \(count) records, the file holds \(records)")
            }
            if try takeUnlessEnd(1, what: "the end", hashed: false) != nil {
                throw corrupt("bytes follow its trailer (at offset \(offset - 1))")
            }
            finished = true
            return nil
        case BackupFormat.errorTag:
            let length = Int(try take(4, what: "the error record").bigEndianValue)
            let message = length <= BackupFormat.maxErrorBytes
                ? String(decoding: try take(length, what: "the error record"), as: UTF8.self) : "(unreadable)"
            throw DocError(.dataLoss, "the backup \(path) is incomplete: the server failed while writing it: \(message)")
        default:
            throw corrupt("record \(records + 1) at offset \(offset - 1) has an unknown tag \(tag)")
        }
    }

    /// Reads every remaining record (the whole file): the file is then known to be complete
    /// and intact.
    func verifyToEnd() throws(DocError) {
        while try next() != nil {}
    }

    // MARK: Bytes

    private func corrupt(_ problem: String) -> DocError {
        DocError(.dataLoss, "the backup \(path) is corrupt: \(problem)")
    }

    /// The next `count` bytes, hashed unless `hashed` is false; a "truncated" error when the
    /// file ends first.
    private func take(_ count: Int, what: String, hashed: Bool = true) throws(DocError) -> [UInt8] {
        guard let bytes = try takeUnlessEnd(count, what: what, hashed: hashed) else {
            throw truncated(inside: what)
        }
        return bytes
    }

    /// The next `count` bytes, or `nil` when the file ends exactly here; a "truncated" error
    /// when it ends part way.
    private func takeUnlessEnd(_ count: Int, what: String, hashed: Bool = true) throws(DocError) -> [UInt8]? {
        while buffer.count - position < count {
            let more = try BackupFiles.read(fd, count: max(Self.readSize, count), path: path)
            if more.isEmpty {
                if buffer.count == position { return nil }
                throw truncated(inside: what)
            }
            buffer.removeSubrange(0..<position)
            position = 0
            buffer += more
        }
        let bytes = Array(buffer[position..<(position + count)])
        position += count
        offset += Int64(count)
        if hashed { hasher.update(data: bytes) }
        return bytes
    }

    private func truncated(inside what: String) -> DocError {
        DocError(.dataLoss,
                 "the backup \(path) is truncated: it ends after \(offset + Int64(buffer.count - position)) bytes, inside \(what) (an interrupted backup or an incomplete copy)")
    }
}
