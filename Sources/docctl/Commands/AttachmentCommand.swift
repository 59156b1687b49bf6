import ArgumentParser
import DocCache
import DocModel
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `docctl attachment get ID --out FILE`: one attachment's bytes.
struct AttachmentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attachment",
        abstract: "Work with one attachment: get its bytes.",
        discussion: """
            Example:
              docctl attachment get ID --out id-front.jpg --tenant acme --uid bob
            """,
        subcommands: [Get.self]
    )

    /// `docctl attachment get ID --out FILE`.
    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Write an attachment's bytes to a file, downloading it into the local cache first if needed.",
            discussion: """
                Example:
                  docctl attachment get ID --out id-front.jpg --tenant acme --uid bob
                  ID: 102400 bytes (image/jpeg) written to id-front.jpg
                With --json:
                  {"id":"…","size":102400,"sha256":"…","contentType":"image/jpeg",
                   "out":"id-front.jpg"}

                An attachment not in the local cache is downloaded from the server,
                checked against its id (the SHA-256 of its content) and kept in the
                cache, so later gets work offline. FILE is written under a temporary
                name in its directory and renamed into place: an existing FILE is
                replaced only once every byte is written.

                Exit status 2 for an id that is not 64 lowercase hex characters or an
                unusable --out; 1 when the server has no such attachment (notFound) or
                refuses it; 3 when it is not cached and the server cannot be reached.
                """
        )

        @Argument(help: "The attachment's id: the SHA-256 of its content, 64 lowercase hex characters.")
        var id: String
        @Option(help: "The file to write (replaced if it exists).")
        var out: String
        @OptionGroup var client: ClientOptions

        func run() async throws {
            let id: AttachmentID
            do {
                id = try AttachmentID(self.id)
            } catch {
                throw CommandFailure(error, json: client.json)
            }
            try OutputFile.checkDestination(out, json: client.json)
            try await ClientSession.with(client) { session in
                let source = try await session.call { try await $0.attachments.file(id) }
                guard let attachment = await session.store.attachments.attachment(id) else {
                    throw CommandFailure(code: "internal", message: "attachment \(id) was fetched but is not recorded in the cache",
                                         json: client.json)
                }
                try AttachmentCopy.copy(from: source, to: out, size: attachment.size, json: client.json)
                if client.json {
                    Output.line(.object([
                        ("id", .string(id.hex)), ("size", .int(attachment.size)), ("sha256", .string(attachment.sha256)),
                        ("contentType", .string(attachment.contentType)), ("out", .string(out)),
                    ]))
                } else {
                    Output.line("\(id): \(attachment.size) bytes (\(attachment.contentType)) written to \(out)")
                }
            }
        }
    }
}

/// Copies an attachment's cached file to the user's file: written under a temporary name beside
/// it, flushed, then renamed over it, so the user's file is never seen half written.
enum AttachmentCopy {
    static let chunkBytes = 1 << 20

    /// The directory `path` is in (`.` for a bare name).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Copies `source`, an attachment of `size` bytes, to `destination`. Nothing is left behind
    /// on failure (the temporary file is removed, `destination` is untouched).
    static func copy(from source: String, to destination: String, size: Int64, json: Bool) throws {
        let name = destination.split(separator: "/").last.map(String.init) ?? destination
        let temporary = directory(of: destination) + "/." + name + ".docctl-" + UUID().uuidString
        func failure(_ what: String) -> CommandFailure {
            CommandFailure(code: "internal", message: "cannot write \(destination): \(what)", json: json)
        }
        guard let input = FileHandle(forReadingAtPath: source) else {
            throw CommandFailure(code: "dataLoss", message: "cannot read the cached attachment at \(source)", json: json)
        }
        defer { try? input.close() }
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
              let output = FileHandle(forWritingAtPath: temporary)
        else { throw failure("cannot create \(temporary) (check the directory's permissions)") }
        var renamed = false
        defer {
            try? output.close()
            if !renamed { try? FileManager.default.removeItem(atPath: temporary) }
        }
        var copied: Int64 = 0
        do {
            while let chunk = try input.read(upToCount: chunkBytes), !chunk.isEmpty {
                try output.write(contentsOf: chunk)
                copied += Int64(chunk.count)
            }
            try output.synchronize()
        } catch {
            throw failure("\(error)")
        }
        guard copied == size else {
            throw CommandFailure(code: "dataLoss",
                message: "the cached file \(source) has \(copied) bytes instead of the attachment's \(size); \(destination) was not written",
                json: json)
        }
        guard rename(temporary, destination) == 0 else {
            throw failure("cannot rename \(temporary) to it: \(String(cString: strerror(errno)))")
        }
        renamed = true
    }
}
