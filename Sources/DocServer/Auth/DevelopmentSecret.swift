#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
public import DocModel

/// The local HS256 secret that `docctl serve` verifies tokens with and `docctl token` signs
/// them with, kept in a file so that both agree with no set-up.
///
/// The file (default `~/.docctl/dev-secret`) holds the base64 of the secret's bytes and a
/// newline. ``loadOrCreate(at:)`` creates it when it is missing: 32 random bytes from the
/// system's secure generator, file mode `0600`, missing parent directories `0700`. Creation
/// is atomic: two processes starting at once (a server and a `docctl token`) end up with the
/// same secret, and no process ever reads a half-written file.
///
/// To sign tokens elsewhere (another language, jwt.io), use the base64-*decoded* bytes of the
/// file as the HS256 key.
///
/// The value never shows its bytes in `description`, `debugDescription`, `dump` or string
/// interpolation.
public struct DevelopmentSecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The fewest secret bytes accepted: HS256 wants a key of at least 256 bits.
    public static let minimumByteCount = 32
    /// The size of a generated secret, in bytes.
    public static let generatedByteCount = 32
    /// The largest secret file read, in bytes.
    public static let maximumFileSize = 4096

    /// The file the secret was read from or written to (after `~` expansion).
    public let path: String
    /// The secret key bytes (the file's base64, decoded).
    public let bytes: [UInt8]
    /// Whether ``loadOrCreate(at:)`` created the file (so a server can say so in its log).
    public let wasCreated: Bool

    private init(path: String, bytes: [UInt8], wasCreated: Bool) {
        self.path = path
        self.bytes = bytes
        self.wasCreated = wasCreated
    }

    /// The default secret file, shared by `docctl serve` and `docctl token`:
    /// `$HOME/.docctl/dev-secret` (the home directory from the user database when `HOME`
    /// is unset).
    ///
    /// - Throws: `failedPrecondition` when no home directory can be found.
    public static func defaultPath() throws(DocError) -> String {
        guard let home = homeDirectory() else {
            throw DocError(.failedPrecondition,
                           "cannot find the home directory for the default development secret "
                               + "(~/.docctl/dev-secret): set HOME or pass a secret file")
        }
        return join(home, ".docctl/dev-secret")
    }

    /// Reads an existing secret file; never creates one.
    ///
    /// - Parameter path: the file; a leading `~` or `~/` means the home directory.
    /// - Throws: a ``DocError`` naming the path when the file is missing (`notFound`), cannot
    ///   be read (`permissionDenied` or `failedPrecondition`), or is empty, not base64, or
    ///   holds fewer than ``minimumByteCount`` bytes (`failedPrecondition`).
    public static func load(from path: String) throws(DocError) -> DevelopmentSecret {
        let path = try expandTilde(path)
        guard let contents = try readFile(path) else {
            throw DocError(.notFound, "the development secret file \(path) does not exist")
        }
        return DevelopmentSecret(path: path, bytes: try parse(contents, path: path), wasCreated: false)
    }

    /// Reads the secret file, creating it with a new random secret when it does not exist.
    ///
    /// - Parameter path: the file, or `nil` for ``defaultPath()``; a leading `~` or `~/`
    ///   means the home directory.
    /// - Throws: a ``DocError`` naming the path when the file cannot be read or created, or
    ///   holds no valid secret (see ``load(from:)``). A bad file is never replaced: delete it
    ///   to have a new secret generated.
    public static func loadOrCreate(at path: String? = nil) throws(DocError) -> DevelopmentSecret {
        let path = if let path { try expandTilde(path) } else { try defaultPath() }
        guard !path.isEmpty else {
            throw DocError(.invalidArgument, "the development secret path is empty")
        }
        // A creator that loses a race to another process reads the winner's file.
        for _ in 0..<3 {
            if let contents = try readFile(path) {
                return DevelopmentSecret(path: path, bytes: try parse(contents, path: path), wasCreated: false)
            }
            try createDirectories(POSIXFile.parent(of: path), for: path)
            let secret = randomBytes(generatedByteCount)
            let text = Array((Data(secret).base64EncodedString() + "\n").utf8)
            if try createExclusively(path, contents: text) {
                return DevelopmentSecret(path: path, bytes: secret, wasCreated: true)
            }
        }
        throw DocError(.aborted, "the development secret file \(path) keeps disappearing while it is read")
    }

    public var description: String { "DevelopmentSecret(\(path), \(bytes.count) bytes)" }
    public var debugDescription: String { description }
    /// What `dump` and debuggers show: `path`, `byteCount` and `wasCreated`, never the bytes.
    public var customMirror: Mirror {
        Mirror(self, children: ["path": path, "byteCount": bytes.count, "wasCreated": wasCreated])
    }

    // MARK: Contents

    /// The secret bytes in a file's contents: base64 (standard or URL-safe, padding
    /// optional), surrounding whitespace ignored.
    static func parse(_ contents: [UInt8], path: String) throws(DocError) -> [UInt8] {
        let text = String(decoding: contents, as: UTF8.self).trimmingSpaces
        guard !text.isEmpty else {
            throw DocError(.failedPrecondition,
                           "the development secret file \(path) is empty; delete it to have a new "
                               + "secret generated, or write the base64 of at least "
                               + "\(minimumByteCount) random bytes into it")
        }
        guard case .success(let data) = Base64.decodeURLSafe(text) else {
            throw DocError(.failedPrecondition,
                           "the development secret file \(path) does not hold base64 text; delete "
                               + "it to have a new secret generated")
        }
        guard data.count >= minimumByteCount else {
            throw DocError(.failedPrecondition,
                           "the development secret in \(path) is too short: \(data.count) bytes, "
                               + "at least \(minimumByteCount) are needed; delete the file to have "
                               + "a new secret generated")
        }
        return data
    }

    private static func randomBytes(_ count: Int) -> [UInt8] {
        // SystemRandomNumberGenerator is cryptographically secure (getrandom / arc4random).
        var rng = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &rng) }
    }

    // MARK: Paths

    private static func homeDirectory() -> String? {
        if let home = getenv("HOME").map({ String(cString: $0) }), !home.isEmpty {
            return home
        }
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(getuid(), &entry, &buffer, buffer.count, &result) == 0,
              result != nil, let dir = entry.pw_dir else { return nil }
        let home = String(cString: dir)
        return home.isEmpty ? nil : home
    }

    static func expandTilde(_ path: String) throws(DocError) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        guard let home = homeDirectory() else {
            throw DocError(.failedPrecondition, "cannot expand '~' in \(path): no home directory (set HOME)")
        }
        return path == "~" ? home : join(home, String(path.dropFirst(2)))
    }

    private static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    // MARK: File system

    /// The file's bytes, or `nil` when it does not exist.
    private static func readFile(_ path: String) throws(DocError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw fileError("cannot read the development secret file \(path)", code)
        }
        defer { close(fd) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let (n, code) = buffer.withUnsafeMutableBytes { POSIXFile.read(fd, into: $0) }
            if let code { throw fileError("cannot read the development secret file \(path)", code) }
            if n == 0 { break }
            contents += buffer[0..<n]
            guard contents.count <= maximumFileSize else {
                throw DocError(.failedPrecondition,
                               "the development secret file \(path) is larger than "
                                   + "\(maximumFileSize) bytes; it should hold one line of base64")
            }
        }
        return contents
    }

    /// Creates `directory` and its missing parents with mode 0700.
    private static func createDirectories(_ directory: String, for file: String) throws(DocError) {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        let code = errno
        guard code == ENOENT else {
            throw fileError("cannot use the directory \(directory) for the development secret \(file)", code)
        }
        let up = POSIXFile.parent(of: directory)
        if up != directory { try createDirectories(up, for: file) }
        if mkdir(directory, 0o700) == 0 {
            // The umask may have removed bits; the owner needs all three.
            _ = chmod(directory, 0o700)
        } else if errno != EEXIST {
            throw fileError("cannot create the directory \(directory) for the development secret \(file)", errno)
        }
    }

    /// Writes a new file at `path` with mode 0600 unless one exists; `false` if it exists.
    ///
    /// The contents go to a temporary file first, which is then hard-linked to `path`: the
    /// file appears complete or not at all, and an existing file is never replaced.
    private static func createExclusively(_ path: String, contents: [UInt8]) throws(DocError) -> Bool {
        let directory = POSIXFile.parent(of: path)
        let nonce = randomBytes(8).map { String($0, radix: 16) }.joined()
        let temporary = join(directory, ".dev-secret.\(getpid()).\(nonce).tmp")
        try writeNewFile(temporary, contents: contents, finalPath: path)
        defer { _ = unlink(temporary) }
        if link(temporary, path) == 0 { return true }
        let code = errno
        if code == EEXIST { return false }
        // A file system without hard links: create the file exclusively in place.
        do {
            try writeNewFile(path, contents: contents, finalPath: path)
            return true
        } catch let error where error.code == .alreadyExists {
            return false
        }
    }

    /// Creates `path` (which must not exist) with mode 0600 and writes `contents` durably.
    /// - Throws: `alreadyExists` when the file exists; other failures name `finalPath`.
    private static func writeNewFile(_ path: String, contents: [UInt8], finalPath: String) throws(DocError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 {
            let code = errno
            if code == EEXIST {
                throw DocError(.alreadyExists, "the development secret file \(finalPath) exists")
            }
            throw fileError("cannot create the development secret file \(finalPath)", code)
        }
        var failure: Int32 = 0
        if fchmod(fd, 0o600) != 0 { failure = errno }
        if failure == 0, let code = contents.withUnsafeBytes({ POSIXFile.writeAll($0, to: fd) }) { failure = code }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure != 0 {
            _ = unlink(path)
            throw fileError("cannot write the development secret file \(finalPath)", failure)
        }
    }

    private static func fileError(_ what: String, _ code: Int32) -> DocError {
        let reason = String(cString: strerror(code))
        let docCode: DocError.Code = (code == EACCES || code == EPERM) ? .permissionDenied : .failedPrecondition
        return DocError(docCode, "\(what): \(reason)")
    }
}
