/// An error raised by LevelDB, or by this wrapper when a call cannot be made.
///
/// The shape follows the SSWG packages: a struct with an extensible ``Code`` (new codes can be
/// added without breaking `switch` statements in user code), a ``message`` and, when known, the
/// ``path`` of the database the error concerns.
///
/// Errors reported by LevelDB carry LevelDB's own message verbatim (for example
/// `"Corruption: bad block type"`); the code is derived from the prefix LevelDB puts in front
/// of it (`NotFound:`, `Corruption:`, `Not implemented:`, `Invalid argument:`, `IO error:`).
/// Two cases are refined because callers act on them:
/// - a failure to take the database's `LOCK` file is ``Code/locked``, and its message says that
///   the database is already open by another process or handle, followed by LevelDB's message;
/// - opening with ``Options/errorIfExists`` an existing database is ``Code/alreadyExists``, and
///   opening with ``Options/createIfMissing`` `false` a missing one is ``Code/notFound``.
public struct LevelDBError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure an error is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case notFound, corruption, notSupported, invalidArgument, ioError, locked,
                 alreadyExists, closed, unknown
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// LevelDB's `NotFound`, or a database that does not exist when
        /// ``Options/createIfMissing`` is `false`.
        public static let notFound = Code(.notFound)
        /// LevelDB found damaged data (`Corruption`).
        public static let corruption = Code(.corruption)
        /// LevelDB does not implement the request (`Not implemented`).
        public static let notSupported = Code(.notSupported)
        /// An argument or option was invalid (`Invalid argument`).
        public static let invalidArgument = Code(.invalidArgument)
        /// A file-system operation failed (`IO error`).
        public static let ioError = Code(.ioError)
        /// The database's `LOCK` file is held: the database is open in another process, or
        /// through another ``Database`` in this process.
        public static let locked = Code(.locked)
        /// The database exists and ``Options/errorIfExists`` was set.
        public static let alreadyExists = Code(.alreadyExists)
        /// The ``Database`` (or the snapshot or cursor used) has been closed or released.
        public static let closed = Code(.closed)
        /// Anything else.
        public static let unknown = Code(.unknown)

        /// The code's name, e.g. `locked`.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong. For errors reported by LevelDB this is LevelDB's own message.
    public var message: String
    /// The path of the database concerned, when known.
    public var path: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    /// `LevelDBError.<code> (<path>): <message>`.
    public var description: String {
        if let path {
            return "LevelDBError.\(code) (\(path)): \(message)"
        }
        return "LevelDBError.\(code): \(message)"
    }
}

extension LevelDBError {
    /// Turns a message produced by LevelDB (`Status::ToString()`) into an error.
    init(levelDBMessage message: String, path: String?) {
        let code = Self.classify(message)
        if code == .locked {
            self.init(
                code,
                "the database is already open by another process or by another handle in this "
                    + "process (LevelDB: \(message))",
                path: path)
        } else {
            self.init(code, message, path: path)
        }
    }

    /// The code for a LevelDB status message, from the prefix LevelDB writes.
    static func classify(_ message: String) -> Code {
        if message.hasPrefix("NotFound:") { return .notFound }
        if message.hasPrefix("Corruption:") { return .corruption }
        if message.hasPrefix("Not implemented:") { return .notSupported }
        if message.hasPrefix("Invalid argument:") {
            if message.contains("exists (error_if_exists is true)") { return .alreadyExists }
            if message.contains("does not exist (create_if_missing is false)") { return .notFound }
            return .invalidArgument
        }
        if message.hasPrefix("IO error:") {
            // LevelDB's env reports a held lock as "IO error: lock <db>/LOCK: <reason>".
            if message.hasPrefix("IO error: lock ") || message.contains("/LOCK: ") {
                return .locked
            }
            return .ioError
        }
        return .unknown
    }

    /// The error thrown when a closed database, a released snapshot or a closed cursor is used.
    static func closed(_ what: String, path: String?) -> LevelDBError {
        LevelDBError(.closed, what, path: path)
    }
}
