#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
public import DocModel
internal import LevelDB

/// Backs up the embedded store (``LevelDBServerStore``) to one file, whether its server runs
/// or not (docs/operations.md, "Backups").
///
/// ```swift
/// let result = try LevelDBBackup.backup(dataDirectory: "/var/lib/doccache", to: "/backups/doccache.backup")
/// for tenant in result.summary.header.tenants { print(tenant.tenant, tenant.lastVersion) }
/// ```
///
/// A stopped store is opened and read directly; a store a running server holds (its LevelDB
/// lock) is read by that server, through its ``AdminSocketServer``. Either way the file comes
/// from one snapshot, consistent at one commit version per tenant. It is written as
/// `FILE.partial`, flushed, read back whole (framing, count, checksum) and only then renamed
/// to `FILE`: a failed backup never leaves a plausible-looking `FILE` (an existing one is
/// replaced only by a complete backup).
public enum LevelDBBackup {
    /// Where a backup was read from.
    public enum Source: Sendable, Hashable {
        /// The store was not in use: read directly.
        case stoppedStore
        /// The store's running server sent it through its admin socket at this path.
        case runningServer(socket: String)
    }

    /// A backup written.
    public struct Report: Sendable {
        /// The file's header, records and size.
        public var summary: BackupSummary
        /// Where it was read from.
        public var source: Source
    }

    /// Writes a backup of the store in `dataDirectory` to `file`.
    ///
    /// - Throws: `notFound` when there is no store at `dataDirectory` or `file`'s directory
    ///   is missing; `invalidArgument` when `file` is a directory; `unavailable` when another
    ///   process holds the store and its admin socket cannot be reached; `dataLoss` when the
    ///   server's stream was cut or corrupt; file-system errors by what failed.
    public static func backup(dataDirectory: String, to file: String) throws(DocError) -> Report {
        switch BackupFiles.kind(file) {
        case .directory: throw DocError(.invalidArgument, "--out \(file) is a directory: name the backup file to write")
        case .other: throw DocError(.invalidArgument, "--out \(file) is not a regular file")
        case .missing, .file: break
        }
        let folder = POSIXFile.parent(of: file)
        guard BackupFiles.kind(folder) == .directory else {
            throw DocError(.notFound, "the directory of --out \(file) does not exist: create \(folder) first")
        }
        switch BackupFiles.kind(dataDirectory) {
        case .missing: throw DocError(.notFound, "no data directory at \(dataDirectory)")
        case .file, .other: throw DocError(.invalidArgument, "\(dataDirectory) is not a directory: --data names the store's data directory")
        case .directory: break
        }

        let partial = file + ".partial"
        let fd = try BackupFiles.create(partial)
        var open = true
        func closeFile() {
            if open { _ = close(fd); open = false }
        }
        do {
            let source = try write(dataDirectory: dataDirectory, to: fd, path: partial)
            try BackupFiles.sync(fd, path: partial)
            closeFile()
            let summary = try verify(file: partial)
            try BackupFiles.rename(partial, to: file)
            BackupFiles.syncDirectory(folder)
            return Report(summary: summary, source: source)
        } catch {
            closeFile()
            BackupFiles.remove(partial)
            throw error
        }
    }

    /// Reads a backup file whole and checks it: framing, record count, checksum.
    ///
    /// - Throws: `notFound`, `invalidArgument` (not a backup), `failedPrecondition` (a newer
    ///   format), `dataLoss` (truncated or corrupt), naming the file and the problem.
    public static func verify(file: String) throws(DocError) -> BackupSummary {
        let reader = try BackupReader(path: file)
        defer { reader.close() }
        try reader.verifyToEnd()
        return BackupSummary(header: reader.header, records: reader.records, bytes: reader.offset)
    }

    /// Writes the backup's bytes to `fd`, from the store directly or through its server.
    private static func write(dataDirectory: String, to fd: Int32, path: String) throws(DocError) -> Source {
        var options = LevelDBServerStore.databaseOptions
        options.createIfMissing = false
        let database: Database
        do {
            database = try Database.open(path: dataDirectory, options: options)
        } catch where error.code == .locked {
            let socket = AdminSocketServer.path(dataDirectory: dataDirectory)
            let connection: Int32
            do {
                connection = try AdminSocketClient.connect(socket)
            } catch {
                throw DocError(.unavailable,
                               "the store at \(dataDirectory) is in use by another process, and the server's admin socket cannot be reached (\(error.message)); is a docctl serve of this version running on --data \(dataDirectory)?")
            }
            // Failures from here on are the backup's own (a cut or corrupt stream: dataLoss).
            _ = try AdminSocketClient.get("/backup", on: connection, socketPath: socket, into: fd, filePath: path)
            return .runningServer(socket: socket)
        } catch where error.code == .notFound {
            throw DocError(.notFound, "no store at \(dataDirectory) (it holds no LevelDB database)")
        } catch {
            throw DocError(.unavailable, "cannot open the store at \(dataDirectory): \(error.message)")
        }
        defer { database.close() }
        let source = try LevelDBBackupSource(database: database)
        defer { source.release() }
        while let chunk = try source.next() {
            try BackupFiles.write(chunk, to: fd, path: path)
        }
        return .stoppedStore
    }
}

/// What a backup file holds, as read and checked by ``LevelDBBackup/verify(file:)``.
public struct BackupSummary: Sendable, Hashable {
    /// Its header: layout, time, every tenant's version.
    public var header: BackupHeader
    /// The key/value records in it.
    public var records: Int
    /// Its size in bytes.
    public var bytes: Int64

    /// Creates a summary as given; ``LevelDBBackup/verify(file:)`` makes the ones read from files.
    public init(header: BackupHeader, records: Int, bytes: Int64) {
        self.header = header
        self.records = records
        self.bytes = bytes
    }
}
