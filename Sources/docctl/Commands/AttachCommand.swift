import ArgumentParser
import DocCache
import DocModel
import Foundation

/// `docctl attach FILE [--content-type T]`: adds a file to the local cache as an attachment
/// (docs/attachments.md) and reports its upload.
struct AttachCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attach",
        abstract: "Add a file to the local cache as an attachment; it is uploaded when the server can be reached.",
        discussion: """
            Example:
              docctl attach id-front.jpg --tenant acme --uid alice
              2cf24dba…9824  uploaded  102400 bytes  image/jpeg
              docctl set kyc/f1 '{"idFront": {"$attachment": "2cf24dba…9824"}}' \
                --tenant acme --uid alice

            The file is copied into the cache and recorded durably first (its id is
            the SHA-256 of its content, 64 hex characters), then uploaded. The
            command waits while the upload makes progress (3 s without progress at
            most, 60 s in all) and prints ID  STATE  SIZE bytes  CONTENT-TYPE, where
            STATE is local_only (not uploaded yet: the server cannot be reached, or
            the upload goes on at the next command), uploading SENT/TOTAL, uploaded,
            or failed (the server refused it: its error follows, exit 1). A write
            that refers to the attachment is sent only after it is uploaded.
            With --json, one line:
              {"id":"…","state":"uploaded","size":102400,"sha256":"…",
               "contentType":"image/jpeg"}

            Without --content-type the type is guessed from the file name's
            extension: jpg, jpeg, png, gif, webp, heic, heif, tif, tiff, bmp, svg,
            pdf, json, xml, zip, gz, txt, csv, md, html, htm, mp3, m4a, wav, mp4,
            mov; any other file is application/octet-stream.

            A missing or unreadable file exits 1; an empty file, a directory, a
            file over 100 MiB or a bad content type exits 2. Nothing is stored then.
            """
    )

    @Argument(help: "The file to attach.")
    var file: String
    @Option(help: "The media type, e.g. image/jpeg (default: guessed from the extension, else application/octet-stream).")
    var contentType: String?
    @OptionGroup var client: ClientOptions

    func run() async throws {
        let contentType = self.contentType ?? ContentTypes.guess(for: file)
        try await ClientSession.with(client) { session in
            try refuseOversizedFile(limit: session.store.settings.maxAttachmentBytes)
            let added = try await session.call { try await $0.attachments.add(file: file, contentType: contentType) }
            let attachment = await UploadWait.settle(added, store: session.store, serverURL: client.serverURL)
            Output.line(client.json ? AttachmentRendering.summary(attachment).text : AttachmentRendering.human(attachment))
            if let error = AttachmentRendering.failure(of: attachment.state) {
                throw CommandFailure(exitCode: CommandFailure.failed, code: error.code.name,
                    message: "the server refused attachment \(attachment.id) (\(file)): \(error.message); "
                        + "it stays in the local cache as failed (docctl attachments lists it)",
                    json: false)
            }
        }
    }

    /// Refuses a file over the store's `limit` before anything is copied (the store would
    /// refuse it too, after reading up to the limit).
    private func refuseOversizedFile(limit: Int64) throws {
        let attributes = try? FileManager.default.attributesOfItem(atPath: file)
        guard attributes?[.type] as? FileAttributeType == .typeRegular,
              let size = attributes?[.size] as? Int64, size > limit
        else { return }
        throw CommandFailure(exitCode: CommandFailure.usage, code: "invalidArgument",
            message: "\(file) is \(size) bytes, over the attachment limit of \(limit) bytes",
            json: client.json)
    }
}
