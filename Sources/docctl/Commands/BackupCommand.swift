import ArgumentParser
import DocModel
import DocServer
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `docctl backup --data DIR --out FILE`: a consistent backup of the embedded store, whether
/// its server runs or not.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Back up the embedded store to one file, while its server runs or not.",
        discussion: """
            Example:
              docctl backup --data ~/.docctl/data --out /backups/doccache-2026-11-25.backup
              tenant acme  version 1795608000123456  2026-11-25T12:00:00.123456Z
              backup written to /backups/doccache-2026-11-25.backup: 1 tenant, 5012 records, 1048576 bytes, from the running server
            With --json:
              {"file":"…","source":"server","createdAt":"…","layout":"2",
               "tenants":[{"tenant":"acme","version":1795608000123456}],"records":5012,"bytes":1048576}

            The backup is one snapshot: every tenant exactly as of one commit version (printed).
            A store its server holds is backed up by that server, through the admin socket
            DIR/admin.sock; a stopped store is read directly. The file is written as
            FILE.partial, read back and checked, then renamed: a failed backup leaves no FILE
            (an existing FILE is replaced only by a complete backup).

            Attachments (DIR/attachments) are files, not in the backup: copy them after it
            (docs/operations.md, "Backups"). Restore with `docctl restore FILE --data DIR`.

            Exit status 1 when there is no store at DIR or the backup failed, 2 for an --out
            that is a directory, 3 when a process holds the store and its admin socket cannot
            be reached.
            """
    )

    @Option(help: "The data directory of the embedded store (env DOCCTL_DATA; default ~/.docctl/data).")
    var data: String?
    @Option(help: "The backup file to write (replaced only once the new backup is complete).")
    var out: String
    @Flag(help: "Output one JSON line.")
    var json = false

    func validate() throws {
        if out.isEmpty { throw ValidationError("--out must name a file") }
    }

    func run() async throws {
        let dataDirectory = Environment.value(data, "DOCCTL_DATA") ?? Environment.home + "/data"
        let result: LevelDBBackup.Report
        do {
            result = try LevelDBBackup.backup(dataDirectory: dataDirectory, to: out)
        } catch {
            throw CommandFailure(error, json: json)
        }
        let header = result.summary.header
        let source: String
        switch result.source {
        case .runningServer: source = "server"
        case .stoppedStore: source = "store"
        }
        if json {
            Output.line(.object([
                ("file", .string(out)), ("source", .string(source)), ("createdAt", .string(header.createdAt.rfc3339)),
                ("layout", .string(header.layoutVersion)),
                ("tenants", .array(header.tenants.map {
                    .object([("tenant", .string($0.tenant.rawValue)), ("version", .int($0.lastVersion.microseconds))])
                })),
                ("records", .int(Int64(result.summary.records))), ("bytes", .int(result.summary.bytes)),
            ]))
        } else {
            for tenant in header.tenants {
                Output.line("tenant \(tenant.tenant)  version \(tenant.lastVersion.microseconds)  \(tenant.lastVersion.timestamp.rfc3339)")
            }
            let tenants = header.tenants.count == 1 ? "1 tenant" : "\(header.tenants.count) tenants"
            let from: String
            switch result.source {
            case .runningServer: from = "from the running server"
            case .stoppedStore: from = "from the stopped store"
            }
            Output.line("backup written to \(out): \(tenants), \(result.summary.records) records, \(result.summary.bytes) bytes, \(from)")
        }
        let attachments = (dataDirectory.hasSuffix("/") ? dataDirectory : dataDirectory + "/") + "attachments"
        if FileManager.default.fileExists(atPath: attachments) {
            Output.standardError(
                "note: attachments are not in the backup: copy \(attachments) now, after it (docs/operations.md, \"Backups\")")
        }
    }
}
