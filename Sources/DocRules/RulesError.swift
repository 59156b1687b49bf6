public import DocModel

/// An error in a rules file: where it is (file, line, column) and what was wrong or expected.
///
/// A rules file that raises a `RulesError` while loading is never used: ``RuleSet/parse(source:file:)``
/// throws and nothing is installed.
public struct RulesError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is. Extensible: new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The text is not valid rules syntax (an unexpected token, an unterminated string, …).
        public static let syntax = Code("syntax")
        /// The text parses but breaks a rule of the language (recursion, too many `let`s,
        /// an unknown type name, an unsupported service, …).
        public static let invalidRule = Code("invalidRule")
        /// The text is nested deeper than the parser allows.
        public static let tooComplex = Code("tooComplex")
        /// The rules file could not be read.
        public static let io = Code("io")

        public var description: String { name }
    }

    /// What kind of problem this is.
    public var code: Code
    /// What was wrong, in words.
    public var message: String
    /// The file name given to the parser.
    public var file: String
    /// The 1-based line of the problem.
    public var line: Int
    /// The 1-based column (in Unicode scalars) of the problem.
    public var column: Int
    /// For syntax errors, what the parser expected at that point (e.g. `["';'", "a newline"]`).
    public var expected: [String]

    /// An error at `file:line:column`.
    public init(_ code: Code, _ message: String, file: String, line: Int, column: Int, expected: [String] = []) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.expected = expected
    }

    /// `file:line:column: message`, the form compilers use.
    public var description: String { "\(file):\(line):\(column): \(message)" }

    /// The same error as a ``DocError`` (`invalidArgument`, located at `file:line:column`).
    public var docError: DocError {
        DocError(.invalidArgument, message, at: "\(file):\(line):\(column)")
    }
}
