/// An error raised by doccache, carrying a Firestore / gRPC status code.
///
/// The shape follows the SSWG packages: a struct with an extensible ``Code`` so new codes can
/// be added without breaking `switch` statements in user code. The ``message`` says what was
/// wrong, and ``location`` (when known) says where: a document path, a field path, a file and
/// line.
public struct DocError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A Firestore / gRPC status code (`ok` 0 … `unauthenticated` 16).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Int, CaseIterable {
            case ok = 0, cancelled, unknown, invalidArgument, deadlineExceeded, notFound,
                 alreadyExists, permissionDenied, resourceExhausted, failedPrecondition, aborted,
                 outOfRange, unimplemented, `internal`, unavailable, dataLoss, unauthenticated
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// 0: not an error.
        public static let ok = Code(.ok)
        /// 1: the operation was cancelled, usually by the caller.
        public static let cancelled = Code(.cancelled)
        /// 2: an error with no better code (e.g. a non-`DocError` failure wrapped as one).
        public static let unknown = Code(.unknown)
        /// 3: the request itself is wrong (a bad path, value, query or batch); retrying won't help.
        public static let invalidArgument = Code(.invalidArgument)
        /// 4: the operation did not finish before its deadline.
        public static let deadlineExceeded = Code(.deadlineExceeded)
        /// 5: a document, attachment or other entity the request needs does not exist.
        public static let notFound = Code(.notFound)
        /// 6: the entity the request would create already exists.
        public static let alreadyExists = Code(.alreadyExists)
        /// 7: the caller is authenticated but not allowed to do this (e.g. refused by the rules).
        public static let permissionDenied = Code(.permissionDenied)
        /// 8: a quota or buffer ran out (e.g. a full outbox or disk).
        public static let resourceExhausted = Code(.resourceExhausted)
        /// 9: the system is not in the state the operation requires (e.g. a write's precondition).
        public static let failedPrecondition = Code(.failedPrecondition)
        /// 10: the operation conflicted with a concurrent one; retry it.
        public static let aborted = Code(.aborted)
        /// 11: a value or offset is past the valid range.
        public static let outOfRange = Code(.outOfRange)
        /// 12: the operation is not supported.
        public static let unimplemented = Code(.unimplemented)
        /// 13: a failure inside the system: a broken invariant or an unexpected storage error.
        public static let `internal` = Code(.internal)
        /// 14: the service or its storage cannot be reached right now; retrying may help.
        public static let unavailable = Code(.unavailable)
        /// 15: stored data is corrupt or lost (e.g. an undecodable encoding).
        public static let dataLoss = Code(.dataLoss)
        /// 16: the request has no valid credentials (a missing, invalid or expired token).
        public static let unauthenticated = Code(.unauthenticated)

        /// The numeric gRPC code (0…16).
        public var rawValue: Int { base.rawValue }

        /// Creates a code from its numeric gRPC value; `nil` outside 0…16.
        public init?(rawValue: Int) {
            guard let base = Base(rawValue: rawValue) else { return nil }
            self.base = base
        }

        /// Creates a code from its name as written on the wire (`"invalidArgument"`); also
        /// accepts the gRPC spelling (`"INVALID_ARGUMENT"`) and the JS SDK's (`"invalid-argument"`).
        public init?(name: String) {
            let folded = name.lowercased().filter { $0 != "_" && $0 != "-" }
            guard let base = Base.allCases.first(where: { "\($0)".lowercased() == folded }) else {
                return nil
            }
            self.base = base
        }

        /// The code's name, e.g. `invalidArgument`.
        public var name: String { "\(base)" }
        public var description: String { name }

        /// Whether a write failing with this code is retried rather than rejected
        /// (Firestore's `isPermanentError` complement).
        public var isTransient: Bool {
            switch base {
            case .cancelled, .unknown, .deadlineExceeded, .resourceExhausted, .internal,
                 .unavailable, .unauthenticated, .aborted:
                return true
            default:
                return false
            }
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong, in words a user can act on.
    public var message: String
    /// Where it was wrong, when known: a document path, a field path, a file position.
    public var location: String?

    /// Creates an error; `location`, when known, names where the problem is (a path, a field, an
    /// offset) and is shown after the message in ``description``.
    public init(_ code: Code, _ message: String, at location: String? = nil) {
        self.code = code
        self.message = message
        self.location = location
    }

    public var description: String {
        if let location { return "\(code): \(message) (at \(location))" }
        return "\(code): \(message)"
    }

    static func invalid(_ message: String, at location: String? = nil) -> DocError {
        DocError(.invalidArgument, message, at: location)
    }
}
