import ArgumentParser

/// `docctl`: runs the doccache backend, reads and writes documents through a local cache,
/// watches live changes, submits requests, inspects the write queue and the failed writes, adds
/// and fetches attachments, and tests rules.
///
/// Exit codes: 0 success, 1 the operation failed (rejected, denied, not found), 2 usage
/// error, 3 the server cannot be reached.
struct Docctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "docctl",
        abstract: "Run the doccache backend and work with its documents from a terminal.",
        discussion: """
            Start a local backend, then watch a collection while another terminal writes to it:

              docctl serve
              docctl listen rooms --limit 50 --tenant acme --uid alice
              docctl set rooms/r1 '{"name": "Lobby"}' --tenant acme --uid bob

            Exit codes: 0 success, 1 operation failed (rejected, denied, not found),
            2 usage error, 3 server unreachable.
            """,
        subcommands: [
            ServeCommand.self, TokenCommand.self, GetCommand.self, SetCommand.self, UpdateCommand.self,
            DeleteCommand.self, PurgeCommand.self, QueryCommand.self, ListenCommand.self, RequestCommand.self,
            PendingCommand.self, FailedCommand.self, SyncCommand.self, StatusCommand.self, RulesCommand.self,
            AttachCommand.self, AttachmentsCommand.self, AttachmentCommand.self, BackupCommand.self, RestoreCommand.self, BundleCommand.self,
        ]
    )
}
