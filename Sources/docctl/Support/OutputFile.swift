import Foundation

/// A file a command writes (`--out FILE`).
enum OutputFile {
    /// Refuses an `--out` that is a directory or whose directory does not exist (exit 2),
    /// before anything is read or written.
    static func checkDestination(_ out: String, json: Bool) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: out, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CommandFailure(exitCode: CommandFailure.usage, code: "invalidArgument",
                                 message: "--out \(out) is a directory; name the file to write", json: json)
        }
        let directory = AttachmentCopy.directory(of: out)
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CommandFailure(exitCode: CommandFailure.usage, code: "invalidArgument",
                                 message: "--out \(out): the directory \(directory) does not exist", json: json)
        }
    }
}
