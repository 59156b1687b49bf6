import CLevelDBExtras
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads LevelDB's write-ahead log (`NNNNNN.log`) and manifest (`MANIFEST-NNNNNN`, the same
/// record format) to tell whether both end with an intact record, which is when appending to
/// them after reopening is safe (``Options/reuseIntactLog``).
///
/// The format (LevelDB's `doc/log_format.md`): 32 KiB blocks of records, each a 7-byte header
/// (masked CRC-32C of the type byte and payload, little-endian payload length, type: full,
/// first, middle or last fragment) and the payload; a block's last 1–6 bytes are zero padding
/// when no header fits. A process killed in the middle of a `write` leaves a shorter last
/// record; a machine that loses power can leave zeros or stale bytes. LevelDB's reader stops
/// quietly at such a tail; appending to it would make the reader drop the rest of that block
/// on the next open, records written after the tear included. So only a log in which every
/// record verifies, fragments follow each other in order and the file ends where a record
/// ends is called intact.
package enum WriteAheadLog {
    /// The size of a log block.
    static let blockSize = 32_768
    /// The size of a record header.
    static let headerSize = 7

    /// The path of the log file with the highest number in `directory` (the one LevelDB
    /// appends to), or `nil` when there is none.
    package static func newestLog(in directory: String) -> String? {
        guard let dir = opendir(directory) else { return nil }
        defer { closedir(dir) }
        var best: (number: UInt64, name: String)?
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasSuffix(".log"), let number = UInt64(name.dropLast(4)) else { continue }
            if best == nil || number > best!.number { best = (number, name) }
        }
        return best.map { directory + "/" + $0.name }
    }

    /// Whether reopening the database in `directory` may append to its files: its newest log
    /// and its manifest (named by `CURRENT`, written in the same record format, and reused
    /// with the log) are both intact and at most `maximumBytes` long. LevelDB's reader takes a
    /// torn manifest tail for its end too; a record appended after it would make the next open
    /// fail with a corruption.
    package static func canReuseFiles(in directory: String, maximumBytes: Int) -> Bool {
        guard let log = newestLog(in: directory), isIntact(path: log, maximumBytes: maximumBytes),
              let current = readFile(directory + "/CURRENT", maximumBytes: 256) else { return false }
        let name = String(decoding: current, as: UTF8.self)
        guard name.hasPrefix("MANIFEST-"), name.hasSuffix("\n"), !name.dropLast().contains("/") else { return false }
        return isIntact(path: directory + "/" + name.dropLast(), maximumBytes: maximumBytes)
    }

    /// Whether the log file at `path` is at most `maximumBytes` long and intact (see the type's
    /// description). A file that cannot be read counts as not intact.
    package static func isIntact(path: String, maximumBytes: Int) -> Bool {
        guard let bytes = readFile(path, maximumBytes: maximumBytes) else { return false }
        return isIntact(bytes)
    }

    /// Whether `log` (the bytes of a log file) is intact.
    package static func isIntact(_ log: [UInt8]) -> Bool {
        log.withUnsafeBufferPointer { bytes in
            var offset = 0
            var inFragmentedRecord = false
            while offset < bytes.count {
                let left = blockSize - offset % blockSize
                if left < headerSize {
                    // The block's padding: zeros, and more data after it.
                    guard offset + left < bytes.count else { return false }
                    for i in offset..<(offset + left) where bytes[i] != 0 { return false }
                    offset += left
                    continue
                }
                guard bytes.count - offset >= headerSize else { return false }
                let stored = UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8
                    | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
                let length = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8
                let type = bytes[offset + 6]
                let end = offset + headerSize + length
                guard end <= bytes.count, headerSize + length <= left else { return false }
                // Full = 1, first = 2, middle = 3, last = 4; anything else (zeros) is not a record.
                switch type {
                case 1, 2: if inFragmentedRecord { return false }
                case 3, 4: if !inFragmentedRecord { return false }
                default: return false
                }
                inFragmentedRecord = type == 2 || type == 3
                let crc = CRC32C.checksum(UnsafeBufferPointer(rebasing: bytes[(offset + 6)..<end]))
                guard CRC32C.masked(crc) == stored else { return false }
                offset = end
            }
            return !inFragmentedRecord
        }
    }

    private static func readFile(_ path: String, maximumBytes: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, Int(info.st_size) <= maximumBytes else { return nil }
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let n = bytes.withUnsafeMutableBytes { buffer in
                read(fd, buffer.baseAddress! + done, size - done)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }
}

/// CRC-32C (Castagnoli), as LevelDB checksums its log records and table blocks.
package enum CRC32C {
    /// The CRC-32C of `bytes` (the processor's CRC instruction where it has one).
    package static func checksum(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        guard let base = bytes.baseAddress else { return 0 }
        return doccache_crc32c(base, bytes.count)
    }

    /// LevelDB's masking of a stored CRC (so that a CRC of data holding CRCs is not trivial).
    package static func masked(_ crc: UInt32) -> UInt32 {
        ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8
    }
}
