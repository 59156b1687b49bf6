import ArgumentParser
import DocModel
import DocServer
import DocServerPostgres

/// `docctl restore FILE --data DIR`: a backup into a new data directory; `docctl restore
/// --store URL --after-pg-restore`: new incarnations after a `pg_restore`.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup into a new data directory (or finish a pg_restore).",
        discussion: """
            Example:
              docctl restore /backups/doccache-2026-11-25.backup --data /var/lib/doccache-new
              tenant acme  version 1795608000123456  restored
              restored /backups/doccache-2026-11-25.backup into /var/lib/doccache-new: 1 tenant, 5012 records
            With --json:
              {"file":"…","data":"…","tenants":[{"tenant":"acme","version":1795608000123456}],
               "records":5012,"bytes":1048576}

            DIR must be empty or absent. The whole file is checked (framing, count, SHA-256)
            before anything is written; it is restored into a directory beside DIR that is
            renamed to DIR at the end, so a failed restore leaves nothing. Then start the server
            on DIR. Clients resume from their tokens up to each tenant's version; a token from
            after it (writes the restore lost) gets a reset, never stale data. A batch
            committed after the backup and sent again by its client is applied again, once.
            Copy the attachments into DIR/attachments before starting the server.

            After `pg_restore` of a PostgreSQL store (instances stopped), run
              docctl restore --store postgres://USER@HOST/DB --after-pg-restore
            once, before starting the instances: it gives every tenant a new incarnation the
            same way (docs/operations.md, "Backups").

            Exit status 1 for a missing, truncated or corrupt file or a DIR that is not empty
            (nothing is changed), 2 for a file that is not a backup or a usage error, 3 when the
            database cannot be reached.
            """
    )

    @Argument(help: "The backup file (from docctl backup).")
    var file: String?
    @Option(help: "The data directory to restore into: empty or absent (env DOCCTL_DATA; default ~/.docctl/data).")
    var data: String?
    @Option(help: "With --after-pg-restore: the PostgreSQL store, postgres://USER[:PASSWORD]@HOST[:PORT]/DB (env DOCCTL_STORE).")
    var store: String?
    @Flag(help: "After pg_restore of a PostgreSQL store, with every instance stopped: give every tenant a new incarnation (clients' tokens from after the dump get a reset).")
    var afterPgRestore = false
    @Flag(help: "Output one JSON line.")
    var json = false

    func validate() throws {
        if afterPgRestore {
            if file != nil { throw ValidationError("--after-pg-restore takes no FILE: pg_restore restores the dump, this only finishes it") }
            if data != nil { throw ValidationError("--after-pg-restore works on --store postgres://…, not on --data") }
        } else {
            if store != nil { throw ValidationError("a PostgreSQL store is restored with pg_restore; then run docctl restore --store URL --after-pg-restore") }
            guard let file, !file.isEmpty else { throw ValidationError("name the backup file: docctl restore FILE --data DIR") }
        }
    }

    func run() async throws {
        if afterPgRestore {
            try await reincarnatePostgres()
        } else {
            try restoreFile()
        }
    }

    private func restoreFile() throws {
        let file = self.file ?? ""
        let dataDirectory = Environment.value(data, "DOCCTL_DATA") ?? Environment.home + "/data"
        let result: LevelDBRestore.Report
        do {
            result = try LevelDBRestore.restore(file: file, into: dataDirectory)
        } catch {
            throw CommandFailure(error, json: json)
        }
        let summary = result.summary
        if json {
            Output.line(.object([
                ("file", .string(file)), ("data", .string(dataDirectory)),
                ("tenants", .array(summary.header.tenants.map {
                    .object([("tenant", .string($0.tenant.rawValue)), ("version", .int($0.lastVersion.microseconds))])
                })),
                ("records", .int(Int64(summary.records))), ("bytes", .int(summary.bytes)),
            ]))
        } else {
            for tenant in summary.header.tenants {
                Output.line("tenant \(tenant.tenant)  version \(tenant.lastVersion.microseconds)  restored")
            }
            let tenants = summary.header.tenants.count == 1 ? "1 tenant" : "\(summary.header.tenants.count) tenants"
            Output.line("restored \(file) into \(dataDirectory): \(tenants), \(summary.records) records")
        }
        Output.standardError(
            "note: attachments are not in the backup: copy them into \(dataDirectory)/attachments before starting the server (docs/operations.md, \"Backups\")")
    }

    private func reincarnatePostgres() async throws {
        guard let url = Environment.value(store, "DOCCTL_STORE") else {
            throw ValidationError("--after-pg-restore needs --store postgres://… (or DOCCTL_STORE)")
        }
        let tenants: [TenantReincarnation]
        do {
            let store = try await PostgresServerStore.connect(url: url)
            do {
                tenants = try await store.reincarnateAfterRestore()
            } catch {
                await store.close()
                throw error
            }
            await store.close()
        } catch {
            throw CommandFailure(error, json: json)
        }
        let name = PostgresServerStore.redacted(url)
        if json {
            Output.line(.object([
                ("store", .string(name)),
                ("tenants", .array(tenants.map {
                    .object([("tenant", .string($0.tenant.rawValue)), ("version", .int($0.previous.validThrough.microseconds))])
                })),
            ]))
        } else {
            for tenant in tenants {
                Output.line("tenant \(tenant.tenant)  version \(tenant.previous.validThrough.microseconds)  new incarnation")
            }
            let count = tenants.count == 1 ? "1 tenant" : "\(tenants.count) tenants"
            Output.line("gave \(count) of \(name) a new incarnation: tokens up to these versions resume, later ones get a reset")
        }
    }
}
