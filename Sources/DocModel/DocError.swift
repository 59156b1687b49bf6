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

        public static let ok = Code(.ok)
        public static let cancelled = Code(.cancelled)
        public static let unknown = Code(.unknown)
        public static let invalidArgument = Code(.invalidArgument)
        public static let deadlineExceeded = Code(.deadlineExceeded)
        public static let notFound = Code(.notFound)
        public static let alreadyExists = Code(.alreadyExists)
        public static let permissionDenied = Code(.permissionDenied)
        public static let resourceExhausted = Code(.resourceExhausted)
        public static let failedPrecondition = Code(.failedPrecondition)
        public static let aborted = Code(.aborted)
        public static let outOfRange = Code(.outOfRange)
        public static let unimplemented = Code(.unimplemented)
        public static let `internal` = Code(.internal)
        public static let unavailable = Code(.unavailable)
        public static let dataLoss = Code(.dataLoss)
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
