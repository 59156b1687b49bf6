/// A position in a rules source: 1-based line and column (in Unicode scalars), and the byte offset.
struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    var line: Int
    var column: Int
    var offset: Int

    var description: String { "\(line):\(column)" }
}

/// One piece of a path literal such as `/databases/$(database)/documents/users/$(uid)`.
enum PathLiteralPiece: Sendable, Equatable {
    /// A `/` between segments.
    case separator
    /// Literal segment text.
    case text(String)
    /// A `$(…)` interpolation: the byte range of its expression and where it starts.
    case interpolation(start: Int, end: Int, location: SourceLocation)
}

/// Punctuation and operators.
enum Punct: String, Sendable, CaseIterable {
    case lparen = "(", rparen = ")", lbracket = "[", rbracket = "]", lbrace = "{", rbrace = "}"
    case comma = ",", semicolon = ";", colon = ":", dot = ".", question = "?"
    case assign = "=", eq = "==", ne = "!=", lt = "<", le = "<=", gt = ">", ge = ">="
    case and = "&&", or = "||", not = "!"
    case plus = "+", minus = "-", star = "*", slash = "/", percent = "%"
}

/// The kind of a token, with its payload.
enum TokenKind: Sendable, Equatable {
    /// A name: identifiers and keywords alike (keywords are recognized by the parser).
    case identifier(String)
    /// An integer literal's digits (the parser checks the range, so `-9223372036854775808` works).
    case integer(String)
    case float(Double)
    case string(String)
    /// A path literal in an expression.
    case path([PathLiteralPiece])
    /// The raw text of the path after `match` (`/users/{userId}/posts/{post=**}`).
    case matchPath(String)
    case punct(Punct)
    case end
}

/// A token with its position.
struct Token: Sendable {
    var kind: TokenKind
    var location: SourceLocation
    /// The byte offset just past the token.
    var endOffset: Int
    /// Whether a line break separates this token from the previous one.
    var newlineBefore: Bool

    /// How the token reads in an error message.
    var display: String {
        switch kind {
        case .identifier(let s): return "'\(s)'"
        case .integer(let s): return "integer \(s)"
        case .float(let d): return "number \(d)"
        case .string: return "a string"
        case .path: return "a path"
        case .matchPath(let s): return "path '\(s)'"
        case .punct(let p): return "'\(p.rawValue)'"
        case .end: return "end of file"
        }
    }

    func isPunct(_ p: Punct) -> Bool { kind == .punct(p) }

    func isIdentifier(_ name: String) -> Bool { kind == .identifier(name) }

    var identifier: String? { if case .identifier(let s) = kind { return s } else { return nil } }
}
