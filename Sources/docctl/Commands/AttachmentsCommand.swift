import ArgumentParser
import DocCache
import DocModel

/// `docctl attachments`: the local cache's attachments and how far each is on its way to the
/// server.
struct AttachmentsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attachments",
        abstract: "List the local cache's attachments (oldest first) with their upload state.",
        discussion: """
            Example:
              docctl attachments --tenant acme --uid alice
              2cf24dba…9824  uploaded  102400 bytes  image/jpeg
              486ea462…b8a7  uploading 4194304/9000000  9000000 bytes  application/pdf
              fcde2b2e…8fb9  failed  2000 bytes  text/plain  invalidArgument: …
              3 attachments
            (each line starts with the whole 64-character id).

            States: local_only (not uploaded yet), uploading SENT/TOTAL, uploaded
            (on the server: uploaded from here, or downloaded), failed (the server
            refused it; its error follows). With --json, one line per attachment
            and no count line:
              {"id":"…","state":"uploading","size":9000000,"sha256":"…",
               "contentType":"application/pdf","sent":4194304,
               "createdAt":"2026-11-22T09:00:00.000000Z","error":null}
            "sent" is the bytes the server holds (the size once uploaded, 0 before
            an upload starts); "error" is {"code":…,"message":…} for a failed one.
            """
    )

    @OptionGroup var client: ClientOptions

    func run() async throws {
        try await ClientSession.with(client) { session in
            let attachments = await session.store.attachments.all()
            for attachment in attachments {
                Output.line(client.json ? AttachmentRendering.detail(attachment).text : AttachmentRendering.human(attachment))
            }
            if !client.json { Output.line("\(attachments.count) attachment\(attachments.count == 1 ? "" : "s")") }
        }
    }
}
