/// Turns rules source text into tokens.
///
/// The lexer knows two pieces of context the grammar needs:
/// - after the keyword `match`, a `/…` is a match path (`/users/{userId}/posts/{post=**}`);
/// - in an expression, a `/` where an operand is expected starts a path literal
///   (`/databases/$(database)/documents/users/$(uid)`); after an operand it is division.
///
/// `$(…)` interpolations are not lexed here: the path token records their byte ranges and the
/// parser lexes and parses them as expressions.
struct Lexer {
    private let bytes: [UInt8]
    private var i: Int
    private let end: Int
    private var line: Int
    private var column: Int
    private let file: String
    private let meter = ParseMeter.current

    init(bytes: [UInt8], start: Int, end: Int, location: SourceLocation, file: String) {
        self.bytes = bytes
        self.i = start
        self.end = end
        self.line = location.line
        self.column = location.column
        self.file = file
    }

    /// Tokenizes the whole range; the last token is `.end`.
    static func tokenize(_ bytes: [UInt8], start: Int, end: Int, location: SourceLocation, file: String) throws(RulesError) -> [Token] {
        var lexer = Lexer(bytes: bytes, start: start, end: end, location: location, file: file)
        return try lexer.run()
    }

    private var location: SourceLocation { SourceLocation(line: line, column: column, offset: i) }

    private func peek(_ ahead: Int = 0) -> UInt8? {
        if let meter, !meter.step() { return nil }
        let j = i + ahead
        return j < end ? bytes[j] : nil
    }

    private mutating func advance() {
        let b = bytes[i]
        i += 1
        if b == 0x0A {
            line += 1
            column = 1
        } else if i < end, bytes[i] & 0xC0 == 0x80 {
            // Inside a multi-byte scalar: the column moves once, past its last byte.
        } else {
            column += 1
        }
    }

    private func error(_ message: String, at loc: SourceLocation, expected: [String] = []) -> RulesError {
        RulesError(.syntax, message, file: file, line: loc.line, column: loc.column, expected: expected)
    }

    private mutating func run() throws(RulesError) -> [Token] {
        var tokens: [Token] = []
        while true {
            let newline = try skipTrivia()
            let start = location
            guard let c = peek() else {
                tokens.append(Token(kind: .end, location: start, endOffset: i, newlineBefore: newline))
                return tokens
            }
            let kind: TokenKind
            if c == UInt8(ascii: "/"), let previous = tokens.last, previous.isIdentifier("match"),
               tokens.count < 2 || !tokens[tokens.count - 2].isPunct(.dot) {
                kind = try lexMatchPath()
            } else if c == UInt8(ascii: "/"), !Self.endsOperand(tokens.last, after: tokens.count >= 2 ? tokens[tokens.count - 2] : nil) {
                kind = try lexPathLiteral()
            } else if isIdentifierStart(c) {
                if (c == UInt8(ascii: "r") || c == UInt8(ascii: "R")),
                   let q = peek(1), q == UInt8(ascii: "'") || q == UInt8(ascii: "\"") {
                    advance()
                    kind = .string(try lexString(raw: true))
                } else {
                    kind = .identifier(lexIdentifier())
                }
            } else if isDigit(c) {
                kind = try lexNumber()
            } else if c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") {
                kind = .string(try lexString(raw: false))
            } else {
                kind = .punct(try lexPunct())
            }
            tokens.append(Token(kind: kind, location: start, endOffset: i, newlineBefore: newline))
        }
    }

    /// Whether a `/` after `token` is division (the token ends an operand) rather than the start
    /// of a path literal.
    static func endsOperand(_ token: Token?, after previous: Token?) -> Bool {
        guard let token else { return false }
        switch token.kind {
        case .identifier(let name):
            // A keyword after `.` is a field name (`resource.data.in / 2`).
            if previous?.isPunct(.dot) == true { return true }
            return !["if", "return", "in", "is", "let", "allow", "match", "function", "service"].contains(name)
        case .integer, .float, .string, .path:
            return true
        case .punct(let p):
            return p == .rparen || p == .rbracket || p == .rbrace
        case .matchPath, .end:
            return false
        }
    }

    /// Skips spaces and comments; returns whether a line break was crossed.
    private mutating func skipTrivia() throws(RulesError) -> Bool {
        var newline = false
        while let c = peek() {
            if c == UInt8(ascii: " ") || c == UInt8(ascii: "\t") || c == 0x0D || c == 0x0C || c == 0x0B {
                advance()
            } else if c == 0x0A {
                newline = true
                advance()
            } else if c == UInt8(ascii: "/"), peek(1) == UInt8(ascii: "/") {
                while let d = peek(), d != 0x0A { advance() }
            } else if c == UInt8(ascii: "/"), peek(1) == UInt8(ascii: "*") {
                let start = location
                advance(); advance()
                var closed = false
                while let d = peek() {
                    if d == UInt8(ascii: "*"), peek(1) == UInt8(ascii: "/") {
                        advance(); advance()
                        closed = true
                        break
                    }
                    if d == 0x0A { newline = true }
                    advance()
                }
                if !closed { throw error("unterminated comment", at: start, expected: ["'*/'"]) }
            } else {
                break
            }
        }
        return newline
    }

    private func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }

    private func isIdentifierStart(_ c: UInt8) -> Bool {
        c == UInt8(ascii: "_") || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
    }

    private func isIdentifierPart(_ c: UInt8) -> Bool { isIdentifierStart(c) || isDigit(c) }

    private mutating func lexIdentifier() -> String {
        let start = i
        while let c = peek(), isIdentifierPart(c) { advance() }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    private mutating func lexNumber() throws(RulesError) -> TokenKind {
        let start = i
        let startLoc = location
        if peek() == UInt8(ascii: "0"), let x = peek(1), x == UInt8(ascii: "x") || x == UInt8(ascii: "X") {
            advance(); advance()
            var value: UInt64 = 0
            var digits = 0
            while let c = peek(), let d = hexValue(c) {
                let (m, o1) = value.multipliedReportingOverflow(by: 16)
                let (s, o2) = m.addingReportingOverflow(UInt64(d))
                if o1 || o2 { throw error("integer literal out of range", at: startLoc) }
                value = s
                digits += 1
                advance()
            }
            if digits == 0 { throw error("expected hexadecimal digits after '0x'", at: startLoc, expected: ["a hexadecimal digit"]) }
            return .integer(String(value))
        }
        while let c = peek(), isDigit(c) { advance() }
        var isFloat = false
        if peek() == UInt8(ascii: "."), let d = peek(1), isDigit(d) {
            isFloat = true
            advance()
            while let c = peek(), isDigit(c) { advance() }
        }
        if let e = peek(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            var k = 1
            if let s = peek(1), s == UInt8(ascii: "+") || s == UInt8(ascii: "-") { k = 2 }
            if let d = peek(k), isDigit(d) {
                isFloat = true
                for _ in 0..<k { advance() }
                while let c = peek(), isDigit(c) { advance() }
            }
        }
        if let c = peek(), isIdentifierStart(c) {
            throw error("unexpected character after number", at: location)
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if isFloat {
            guard let d = Double(text) else { throw error("invalid number '\(text)'", at: startLoc) }
            return .float(d)
        }
        return .integer(text)
    }

    private func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 65...70: return c - 55
        case 97...102: return c - 87
        default: return nil
        }
    }

    private mutating func lexString(raw: Bool) throws(RulesError) -> String {
        let start = location
        let quote = bytes[i]
        advance()
        var out: [UInt8] = []
        while true {
            guard let c = peek(), c != 0x0A else {
                throw error("unterminated string", at: start, expected: ["'\(Character(Unicode.Scalar(quote)))'"])
            }
            if c == quote {
                advance()
                break
            }
            if c == UInt8(ascii: "\\"), !raw {
                let escLoc = location
                advance()
                guard let e = peek() else { throw error("unterminated string", at: start) }
                advance()
                switch e {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "v"): out.append(0x0B)
                case UInt8(ascii: "a"): out.append(0x07)
                case UInt8(ascii: "\\"), UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "`"), UInt8(ascii: "?"), UInt8(ascii: "/"):
                    out.append(e)
                case UInt8(ascii: "x"), UInt8(ascii: "u"), UInt8(ascii: "U"):
                    let count = e == UInt8(ascii: "x") ? 2 : (e == UInt8(ascii: "u") ? 4 : 8)
                    var v: UInt32 = 0
                    for _ in 0..<count {
                        guard let h = peek(), let d = hexValue(h) else {
                            throw error("invalid escape: expected \(count) hexadecimal digits", at: escLoc, expected: ["a hexadecimal digit"])
                        }
                        v = v * 16 + UInt32(d)
                        advance()
                    }
                    guard let scalar = Unicode.Scalar(v) else {
                        throw error("invalid escape: U+\(String(v, radix: 16)) is not a Unicode scalar", at: escLoc)
                    }
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                case 48...55:
                    // Octal: exactly three digits, as in CEL (\000 … \377).
                    var v = UInt32(e - 48)
                    for _ in 0..<2 {
                        guard let o = peek(), o >= 48, o <= 55 else {
                            throw error("invalid octal escape: expected three octal digits", at: escLoc)
                        }
                        v = v * 8 + UInt32(o - 48)
                        advance()
                    }
                    guard v <= 0xFF, let scalar = Unicode.Scalar(v) else { throw error("invalid octal escape", at: escLoc) }
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    throw error("invalid escape '\\\(Character(Unicode.Scalar(e)))'", at: escLoc)
                }
                continue
            }
            out.append(c)
            advance()
        }
        return String(decoding: out, as: UTF8.self)
    }

    private mutating func lexPunct() throws(RulesError) -> Punct {
        let start = location
        let c = bytes[i]
        let next = peek(1)
        switch c {
        case UInt8(ascii: "="):
            advance()
            if next == UInt8(ascii: "=") { advance(); return .eq }
            return .assign
        case UInt8(ascii: "!"):
            advance()
            if next == UInt8(ascii: "=") { advance(); return .ne }
            return .not
        case UInt8(ascii: "<"):
            advance()
            if next == UInt8(ascii: "=") { advance(); return .le }
            return .lt
        case UInt8(ascii: ">"):
            advance()
            if next == UInt8(ascii: "=") { advance(); return .ge }
            return .gt
        case UInt8(ascii: "&"):
            guard next == UInt8(ascii: "&") else { throw error("unexpected '&'", at: start, expected: ["'&&'"]) }
            advance(); advance()
            return .and
        case UInt8(ascii: "|"):
            guard next == UInt8(ascii: "|") else { throw error("unexpected '|'", at: start, expected: ["'||'"]) }
            advance(); advance()
            return .or
        default:
            for p in [Punct.lparen, .rparen, .lbracket, .rbracket, .lbrace, .rbrace, .comma, .semicolon,
                      .colon, .dot, .question, .plus, .minus, .star, .slash, .percent]
            where p.rawValue.utf8.first == c {
                advance()
                return p
            }
            let scalarText: String
            if c < 0x80 {
                scalarText = "'\(Character(Unicode.Scalar(c)))'"
            } else {
                var j = i + 1
                while j < end, bytes[j] & 0xC0 == 0x80 { j += 1 }
                scalarText = "'\(String(decoding: bytes[i..<j], as: UTF8.self))'"
            }
            throw error("unexpected character \(scalarText)", at: start)
        }
    }

    // MARK: - Paths

    /// Characters allowed in a literal path segment.
    private func isSegmentByte(_ c: UInt8) -> Bool {
        if c >= 0x80 { return true }
        if isIdentifierPart(c) { return true }
        switch c {
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"), UInt8(ascii: "@"), UInt8(ascii: "+"):
            return true
        default:
            return false
        }
    }

    /// The path after `match`: `/` segments, where a segment is literal text, `{name}` or `{name=**}`.
    private mutating func lexMatchPath() throws(RulesError) -> TokenKind {
        let start = i
        while peek() == UInt8(ascii: "/") {
            advance()
            if peek() == UInt8(ascii: "{") {
                let braceLoc = location
                while let c = peek(), c != UInt8(ascii: "}") {
                    if c == 0x0A || c == UInt8(ascii: "/") {
                        throw error("unterminated wildcard in match path", at: braceLoc, expected: ["'}'"])
                    }
                    advance()
                }
                guard peek() == UInt8(ascii: "}") else {
                    throw error("unterminated wildcard in match path", at: braceLoc, expected: ["'}'"])
                }
                advance()
            } else {
                let segmentLoc = location
                while let c = peek(), isSegmentByte(c) || c == UInt8(ascii: "(") || c == UInt8(ascii: ")") { advance() }
                if peek() == UInt8(ascii: "{"), looksLikeWildcard(at: i) {
                    throw error("a wildcard must be a whole segment", at: segmentLoc, expected: ["'{name}'"])
                }
            }
        }
        return .matchPath(String(decoding: bytes[start..<i], as: UTF8.self))
    }

    /// Whether `{name}` or `{name=**}` starts at `j` (and is not the start of a block).
    private func looksLikeWildcard(at j0: Int) -> Bool {
        var j = j0 + 1
        guard j < end, isIdentifierStart(bytes[j]) else { return false }
        while j < end, isIdentifierPart(bytes[j]) {
            _ = meter?.step()
            j += 1
        }
        if j + 2 < end, bytes[j] == UInt8(ascii: "="), bytes[j + 1] == UInt8(ascii: "*"), bytes[j + 2] == UInt8(ascii: "*") { j += 3 }
        return j < end && bytes[j] == UInt8(ascii: "}")
    }

    /// A path literal in an expression, with `$(…)` interpolations.
    private mutating func lexPathLiteral() throws(RulesError) -> TokenKind {
        var pieces: [PathLiteralPiece] = []
        while peek() == UInt8(ascii: "/"), peek(1) != UInt8(ascii: "/"), peek(1) != UInt8(ascii: "*") {
            let slashLoc = location
            advance()
            pieces.append(.separator)
            var text: [UInt8] = []
            var any = false
            while let c = peek() {
                if c == UInt8(ascii: "$"), peek(1) == UInt8(ascii: "(") {
                    if !text.isEmpty { pieces.append(.text(String(decoding: text, as: UTF8.self))); text = [] }
                    let openLoc = location
                    advance(); advance()
                    let exprStart = i
                    let exprLoc = location
                    try skipBalanced(from: openLoc)
                    pieces.append(.interpolation(start: exprStart, end: i - 1, location: exprLoc))
                    any = true
                } else if isSegmentByte(c) {
                    text.append(c)
                    advance()
                    any = true
                } else if c == UInt8(ascii: "("), let close = balancedGroupEnd(from: i) {
                    // A parenthesized segment part such as `(default)`.
                    while i <= close { text.append(bytes[i]); advance() }
                    any = true
                } else {
                    break
                }
            }
            if !text.isEmpty { pieces.append(.text(String(decoding: text, as: UTF8.self))) }
            if !any { throw error("empty path segment", at: slashLoc, expected: ["a path segment", "'$('"]) }
        }
        return .path(pieces)
    }

    /// The index of the `)` closing a `(` at `j` when only segment characters lie between.
    private func balancedGroupEnd(from j: Int) -> Int? {
        var k = j + 1
        while k < end, isSegmentByte(bytes[k]) {
            _ = meter?.step()
            k += 1
        }
        return k < end && k > j + 1 && bytes[k] == UInt8(ascii: ")") ? k : nil
    }

    /// Skips to just past the `)` that closes an interpolation, stepping over strings and
    /// nested parentheses.
    private mutating func skipBalanced(from open: SourceLocation) throws(RulesError) {
        var depth = 1
        while let c = peek() {
            if c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") {
                _ = try lexString(raw: false)
                continue
            }
            advance()
            if c == UInt8(ascii: "(") { depth += 1 }
            if c == UInt8(ascii: ")") {
                depth -= 1
                if depth == 0 { return }
            }
        }
        throw error("unterminated '$(' in path", at: open, expected: ["')'"])
    }
}
