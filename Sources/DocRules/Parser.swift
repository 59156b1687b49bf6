/// A parsed rules file: its version and the root blocks of its services (at least one).
struct ParsedRules: Sendable {
    var version: RulesVersion
    /// The body of `service cloud.firestore`, if the file has one.
    var firestore: MatchBlock?
    /// The body of `service firebase.storage`, if the file has one.
    var storage: MatchBlock?
    /// Problems that do not stop the file from loading.
    var warnings: [RulesError]
}

/// A recursive-descent parser for the rules language.
///
/// Operator precedence, loosest first (as Firebase documents it): `?:` (right-associative),
/// `||`, `&&`, `== !=`, `is`, `in`, `< <= > >=`, `+ -`, `* / %`, unary `! -`, and postfix
/// `.` `[]` `()`.
///
/// Statements (`allow`, `let`, `return`) end with `;`, a line break, or the `}` closing their
/// block. Nesting is bounded (``maxNesting`` for blocks and parentheses, ``maxHeight`` for the
/// expression tree) so that hostile input cannot exhaust the stack.
struct Parser {
    /// The deepest nesting of blocks, parentheses, brackets, unary operators and interpolations.
    static let maxNesting = 64
    /// The tallest expression tree (long operator chains count too).
    static let maxHeight = 96
    /// Firestore's limit on `let` bindings per function.
    static let maxLets = 10

    /// Global functions that are not user functions.
    private let bytes: [UInt8]
    private let file: String
    private var tokens: [Token]
    private var pos = 0
    private var nesting: Int
    private var version: RulesVersion = .v1
    private var warnings: [RulesError] = []
    private let meter = ParseMeter.current

    private init(bytes: [UInt8], tokens: [Token], file: String, nesting: Int) {
        self.bytes = bytes
        self.tokens = tokens
        self.file = file
        self.nesting = nesting
    }

    /// Parses a whole rules file and runs the static checks (function resolution, recursion,
    /// `let` limits).
    static func parse(source: String, file: String) throws(RulesError) -> ParsedRules {
        guard let meter = ParseMeter.current else { return try parseFile(source: source, file: file) }
        let parsed: ParsedRules
        do {
            parsed = try parseFile(source: source, file: file)
        } catch {
            throw meter.isExhausted ? exhausted(meter, file: file) : error
        }
        if meter.isExhausted { throw exhausted(meter, file: file) }
        return parsed
    }

    /// The error of a parse a ``ParseMeter`` cut short (the tokens and errors seen then are not
    /// the file's).
    private static func exhausted(_ meter: ParseMeter, file: String) -> RulesError {
        RulesError(.tooComplex, "parsing took more than \(meter.budget) steps", file: file, line: 1, column: 1)
    }

    private static func parseFile(source: String, file: String) throws(RulesError) -> ParsedRules {
        let bytes = Array(source.utf8)
        let tokens = try Lexer.tokenize(bytes, start: 0, end: bytes.count,
                                        location: SourceLocation(line: 1, column: 1, offset: 0), file: file)
        var parser = Parser(bytes: bytes, tokens: tokens, file: file, nesting: 0)
        let roots = try parser.parseFile()
        var checker = StaticChecker(file: file)
        try checker.check(firestore: roots[.firestore], storage: roots[.storage])
        return ParsedRules(version: parser.version, firestore: roots[.firestore], storage: roots[.storage],
                           warnings: parser.warnings + checker.warnings)
    }

    /// Parses a single expression (used by tests and tools).
    static func parseExpression(source: String, file: String = "<expression>") throws(RulesError) -> Expr {
        let bytes = Array(source.utf8)
        let tokens = try Lexer.tokenize(bytes, start: 0, end: bytes.count,
                                        location: SourceLocation(line: 1, column: 1, offset: 0), file: file)
        var parser = Parser(bytes: bytes, tokens: tokens, file: file, nesting: 0)
        let e = try parser.expression()
        guard parser.current.kind == .end else {
            throw parser.unexpected(expected: ["an operator", "end of expression"])
        }
        return e
    }

    // MARK: - Token helpers

    private var current: Token {
        if let meter, !meter.step() { return tokens[tokens.count - 1] }   // the end token: every loop ends
        return tokens[pos]
    }

    private func peekToken(_ ahead: Int = 1) -> Token { tokens[min(pos + ahead, tokens.count - 1)] }

    private mutating func next() -> Token {
        let t = tokens[pos]
        if pos < tokens.count - 1 { pos += 1 }
        return t
    }

    private func error(_ message: String, at loc: SourceLocation, code: RulesError.Code = .syntax, expected: [String] = []) -> RulesError {
        RulesError(code, message, file: file, line: loc.line, column: loc.column, expected: expected)
    }

    private func unexpected(expected: [String]) -> RulesError {
        let list = Self.describe(expected)
        return error("expected \(list), found \(current.display)", at: current.location, expected: expected)
    }

    private static func describe(_ expected: [String]) -> String {
        switch expected.count {
        case 0: return "something else"
        case 1: return expected[0]
        default: return expected.dropLast().joined(separator: ", ") + " or " + expected.last!
        }
    }

    private mutating func expect(_ p: Punct, _ what: String? = nil) throws(RulesError) -> Token {
        guard current.isPunct(p) else { throw unexpected(expected: [what ?? "'\(p.rawValue)'"]) }
        return next()
    }

    private mutating func expectIdentifier(_ what: String) throws(RulesError) -> (String, SourceLocation) {
        guard let name = current.identifier else { throw unexpected(expected: [what]) }
        let loc = current.location
        _ = next()
        return (name, loc)
    }

    private mutating func enter(_ loc: SourceLocation) throws(RulesError) {
        nesting += 1
        if nesting > Self.maxNesting {
            throw error("nesting deeper than \(Self.maxNesting) levels", at: loc, code: .tooComplex)
        }
    }

    private mutating func leave() { nesting -= 1 }

    /// `;`, or a line break / `}` / end of file before the next token.
    private mutating func endStatement(_ what: String) throws(RulesError) {
        if current.isPunct(.semicolon) {
            _ = next()
            return
        }
        if current.isPunct(.rbrace) || current.newlineBefore || current.kind == .end { return }
        throw error("expected ';' or a line break after \(what), found \(current.display)",
                    at: current.location, expected: ["';'", "a line break"])
    }

    private func make(_ kind: Expr.Kind, at loc: SourceLocation) throws(RulesError) -> Expr {
        let e = Expr(kind, at: loc)
        if e.height > Self.maxHeight {
            throw error("expression nested deeper than \(Self.maxHeight) levels", at: loc, code: .tooComplex)
        }
        return e
    }

    // MARK: - File structure

    /// Parses the file: an optional `rules_version`, then `service` blocks (at most one per
    /// service, at least one in all) and top-level functions. A service block sees the
    /// top-level functions declared before it.
    private mutating func parseFile() throws(RulesError) -> [RulesService: MatchBlock] {
        if current.isIdentifier("rules_version") {
            _ = next()
            _ = try expect(.assign)
            guard case .string(let v) = current.kind else { throw unexpected(expected: ["'1' or '2'"]) }
            switch v {
            case "1": version = .v1
            case "2": version = .v2
            default:
                throw error("unsupported rules_version '\(v)'", at: current.location, code: .invalidRule, expected: ["'1'", "'2'"])
            }
            _ = next()
            try endStatement("rules_version")
        }
        var roots: [RulesService: MatchBlock] = [:]
        var topFunctions: [FunctionDecl] = []
        while current.kind != .end {
            if current.isIdentifier("service") {
                let loc = current.location
                _ = next()
                var name = try expectIdentifier("a service name").0
                while current.isPunct(.dot) {
                    _ = next()
                    name += "." + (try expectIdentifier("a service name").0)
                }
                guard let service = RulesService(named: name) else {
                    throw error("unsupported service '\(name)'; only 'cloud.firestore' and 'firebase.storage' are supported",
                                at: loc, code: .invalidRule, expected: RulesService.allCases.map { "'\($0.rawValue)'" })
                }
                guard roots[service] == nil else {
                    throw error("duplicate 'service \(service.rawValue)'", at: loc, code: .invalidRule)
                }
                _ = try expect(.lbrace)
                let body = try parseBody(in: "service")
                _ = try expect(.rbrace, "'}'")
                var functions = body.functions
                for f in topFunctions {
                    if functions[f.name] != nil {
                        throw error("function '\(f.name)' is defined twice", at: f.location, code: .invalidRule)
                    }
                    functions[f.name] = f
                }
                roots[service] = MatchBlock(pattern: [], patternText: "", location: loc, rules: body.rules,
                                            functions: functions, children: body.children)
            } else if current.isIdentifier("function") {
                topFunctions.append(try parseFunction())
            } else {
                throw unexpected(expected: ["'service'", "'function'", "end of file"])
            }
        }
        guard !roots.isEmpty else {
            throw error("no 'service cloud.firestore { … }' in the file", at: current.location,
                        code: .syntax, expected: ["'service'"])
        }
        return roots
    }

    private struct Body {
        var rules: [AllowRule] = []
        var functions: [String: FunctionDecl] = [:]
        var children: [MatchBlock] = []
    }

    private mutating func parseBody(in what: String) throws(RulesError) -> Body {
        var body = Body()
        while true {
            let t = current
            if t.isPunct(.rbrace) { return body }
            if t.isPunct(.semicolon) {
                _ = next()
                continue
            }
            switch t.identifier {
            case "match":
                body.children.append(try parseMatch())
            case "allow":
                body.rules.append(try parseAllow())
            case "function":
                let f = try parseFunction()
                if body.functions[f.name] != nil {
                    throw error("function '\(f.name)' is defined twice in this block", at: f.location, code: .invalidRule)
                }
                body.functions[f.name] = f
            default:
                throw unexpected(expected: ["'match'", "'allow'", "'function'", "'}'"])
            }
        }
    }

    private mutating func parseMatch() throws(RulesError) -> MatchBlock {
        let loc = next().location   // `match`
        try enter(loc)
        defer { leave() }
        guard case .matchPath(let text) = current.kind else {
            throw unexpected(expected: ["a path starting with '/'"])
        }
        let pathLoc = current.location
        _ = next()
        let pattern = try parsePattern(text, at: pathLoc)
        _ = try expect(.lbrace)
        let body = try parseBody(in: "match")
        _ = try expect(.rbrace, "'}'")
        return MatchBlock(pattern: pattern, patternText: text, location: loc, rules: body.rules,
                          functions: body.functions, children: body.children)
    }

    /// Splits a match path into segments and validates each one.
    private mutating func parsePattern(_ text: String, at loc: SourceLocation) throws(RulesError) -> [PatternSegment] {
        var segments: [PatternSegment] = []
        var column = loc.column
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        column += 1
        for (index, part) in parts.enumerated() {
            let segLoc = SourceLocation(line: loc.line, column: column, offset: loc.offset)
            defer { column += part.unicodeScalars.count + 1 }
            if part.isEmpty {
                throw error("empty segment in match path", at: segLoc, expected: ["a path segment"])
            }
            if part.hasPrefix("{") {
                guard part.hasSuffix("}"), part.count >= 3 else {
                    throw error("malformed wildcard '\(part)'", at: segLoc, expected: ["'{name}'", "'{name=**}'"])
                }
                var inner = String(part.dropFirst().dropLast())
                var recursive = false
                if inner.hasSuffix("=**") {
                    recursive = true
                    inner.removeLast(3)
                }
                guard Self.isIdentifier(inner) else {
                    throw error("malformed wildcard '\(part)'", at: segLoc, expected: ["'{name}'", "'{name=**}'"])
                }
                if recursive {
                    if version == .v1, index != parts.count - 1 {
                        warnings.append(error(
                            "in rules_version '1' a recursive wildcard may only end a path; this match never applies (declare rules_version = '2')",
                            at: segLoc, code: .invalidRule))
                    }
                    segments.append(.recursive(inner))
                } else {
                    segments.append(.single(inner))
                }
            } else {
                if part.contains("{") || part.contains("}") {
                    throw error("a wildcard must be a whole segment: '\(part)'", at: segLoc, expected: ["'{name}'"])
                }
                segments.append(.literal(String(part)))
            }
        }
        return segments
    }

    private static func isIdentifier(_ s: String) -> Bool {
        guard let f = s.utf8.first, f == UInt8(ascii: "_") || (f | 0x20) >= 97 && (f | 0x20) <= 122 else { return false }
        return s.utf8.allSatisfy { c in
            c == UInt8(ascii: "_") || (c >= 48 && c <= 57) || ((c | 0x20) >= 97 && (c | 0x20) <= 122)
        }
    }

    private mutating func parseAllow() throws(RulesError) -> AllowRule {
        let loc = next().location   // `allow`
        var methods: Set<RulesMethod> = []
        var names: [String] = []
        let methodList = ["'read'", "'write'", "'get'", "'list'", "'create'", "'update'", "'delete'"]
        repeat {
            if !names.isEmpty { _ = next() }   // the comma
            guard let name = current.identifier, let expanded = RulesMethod.expand(name) else {
                throw unexpected(expected: methodList)
            }
            _ = next()
            names.append(name)
            methods.formUnion(expanded)
        } while current.isPunct(.comma)
        var condition: Expr?
        if current.isPunct(.colon) {
            _ = next()
            if current.isIdentifier("if") { _ = next() }
            condition = try expression()
        } else if current.isIdentifier("if") {
            throw unexpected(expected: ["':'"])
        }
        try endStatement("the allow statement")
        return AllowRule(methods: methods, methodsText: names.joined(separator: ", "), condition: condition, location: loc)
    }

    private mutating func parseFunction() throws(RulesError) -> FunctionDecl {
        let loc = next().location   // `function`
        let (name, _) = try expectIdentifier("a function name")
        if Self.reserved.contains(name) {
            throw error("'\(name)' is a keyword and cannot name a function", at: loc, code: .invalidRule)
        }
        _ = try expect(.lparen)
        var params: [String] = []
        if !current.isPunct(.rparen) {
            repeat {
                if !params.isEmpty { _ = next() }
                let (p, ploc) = try expectIdentifier("a parameter name")
                if params.contains(p) {
                    throw error("parameter '\(p)' is declared twice", at: ploc, code: .invalidRule)
                }
                params.append(p)
            } while current.isPunct(.comma)
        }
        _ = try expect(.rparen, "',' or ')'")
        _ = try expect(.lbrace)
        var lets: [(name: String, value: Expr)] = []
        while current.isIdentifier("let") {
            let letLoc = next().location
            let (n, nloc) = try expectIdentifier("a variable name")
            if lets.contains(where: { $0.name == n }) || params.contains(n) {
                throw error("'\(n)' is already declared in this function", at: nloc, code: .invalidRule)
            }
            if lets.count == Self.maxLets {
                throw error("a function may have at most \(Self.maxLets) let bindings", at: letLoc, code: .invalidRule)
            }
            _ = try expect(.assign)
            let value = try expression()
            try endStatement("the let binding")
            lets.append((n, value))
        }
        guard current.isIdentifier("return") else { throw unexpected(expected: ["'let'", "'return'"]) }
        _ = next()
        let body = try expression()
        try endStatement("the return statement")
        _ = try expect(.rbrace, "'}'")
        return FunctionDecl(name: name, params: params, lets: lets, body: body, location: loc)
    }

    // MARK: - Expressions

    static let reserved: Set<String> = [
        "if", "allow", "match", "function", "let", "return", "service", "in", "is", "rules_version",
    ]

    mutating func expression() throws(RulesError) -> Expr {
        try enter(current.location)
        defer { leave() }
        let cond = try orExpr()
        guard current.isPunct(.question) else { return cond }
        let loc = next().location
        let yes = try expression()
        _ = try expect(.colon, "':'")
        let no = try expression()
        return try make(.ternary(cond, yes, no), at: loc)
    }

    private mutating func orExpr() throws(RulesError) -> Expr {
        var lhs = try andExpr()
        while current.isPunct(.or) {
            let loc = next().location
            lhs = try make(.or(lhs, try andExpr()), at: loc)
        }
        return lhs
    }

    private mutating func andExpr() throws(RulesError) -> Expr {
        var lhs = try equality()
        while current.isPunct(.and) {
            let loc = next().location
            lhs = try make(.and(lhs, try equality()), at: loc)
        }
        return lhs
    }

    private mutating func equality() throws(RulesError) -> Expr {
        var lhs = try isExpr()
        while true {
            let op: BinaryOp
            if current.isPunct(.eq) { op = .equal } else if current.isPunct(.ne) { op = .notEqual } else { return lhs }
            let loc = next().location
            lhs = try make(.binary(op, lhs, try isExpr()), at: loc)
        }
    }

    private mutating func isExpr() throws(RulesError) -> Expr {
        var lhs = try inExpr()
        while current.isIdentifier("is") {
            let loc = next().location
            guard let name = current.identifier else { throw unexpected(expected: ["a type name"]) }
            guard let type = RulesType.named(name) else {
                let names = RulesType.allCases.map(\.rawValue).joined(separator: ", ")
                throw error("unknown type '\(name)' (known: \(names))", at: current.location,
                            code: .invalidRule, expected: ["a type name"])
            }
            _ = next()
            lhs = try make(.isType(lhs, type), at: loc)
        }
        return lhs
    }

    private mutating func inExpr() throws(RulesError) -> Expr {
        var lhs = try relational()
        while current.isIdentifier("in") {
            let loc = next().location
            lhs = try make(.binary(.in, lhs, try relational()), at: loc)
        }
        return lhs
    }

    private mutating func relational() throws(RulesError) -> Expr {
        var lhs = try additive()
        while true {
            let op: BinaryOp
            switch current.kind {
            case .punct(.lt): op = .less
            case .punct(.le): op = .lessOrEqual
            case .punct(.gt): op = .greater
            case .punct(.ge): op = .greaterOrEqual
            default: return lhs
            }
            let loc = next().location
            lhs = try make(.binary(op, lhs, try additive()), at: loc)
        }
    }

    private mutating func additive() throws(RulesError) -> Expr {
        var lhs = try multiplicative()
        while true {
            let op: BinaryOp
            switch current.kind {
            case .punct(.plus): op = .add
            case .punct(.minus): op = .subtract
            default: return lhs
            }
            let loc = next().location
            lhs = try make(.binary(op, lhs, try multiplicative()), at: loc)
        }
    }

    private mutating func multiplicative() throws(RulesError) -> Expr {
        var lhs = try unary()
        while true {
            let op: BinaryOp
            switch current.kind {
            case .punct(.star): op = .multiply
            case .punct(.slash): op = .divide
            case .punct(.percent): op = .modulo
            default: return lhs
            }
            let loc = next().location
            lhs = try make(.binary(op, lhs, try unary()), at: loc)
        }
    }

    private mutating func unary() throws(RulesError) -> Expr {
        let loc = current.location
        if current.isPunct(.not) {
            _ = next()
            try enter(loc)
            defer { leave() }
            return try make(.unary(.not, try unary()), at: loc)
        }
        if current.isPunct(.minus) {
            _ = next()
            // `-9223372036854775808` is a literal, not the negation of an out-of-range one.
            if case .integer(let digits) = current.kind, !peekToken().isPunct(.dot), !peekToken().isPunct(.lbracket) {
                let t = next()
                guard let magnitude = UInt64(digits), magnitude <= UInt64(Int64.max) + 1 else {
                    throw error("integer literal out of range", at: t.location)
                }
                let value = magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
                return try postfix(try make(.int(value), at: loc))
            }
            try enter(loc)
            defer { leave() }
            return try make(.unary(.negate, try unary()), at: loc)
        }
        return try postfix(try primary())
    }

    private mutating func arguments() throws(RulesError) -> [Expr] {
        _ = try expect(.lparen)
        var args: [Expr] = []
        while !current.isPunct(.rparen) {
            args.append(try expression())
            guard current.isPunct(.comma) else { break }
            _ = next()
        }
        _ = try expect(.rparen, "',' or ')'")
        return args
    }

    private mutating func postfix(_ start: Expr) throws(RulesError) -> Expr {
        var e = start
        while true {
            if current.isPunct(.dot) {
                let loc = next().location
                guard let name = current.identifier else { throw unexpected(expected: ["a field or method name"]) }
                _ = next()
                if current.isPunct(.lparen) {
                    e = try make(.method(e, name, try arguments()), at: loc)
                } else {
                    e = try make(.member(e, name), at: loc)
                }
            } else if current.isPunct(.lbracket) {
                let loc = next().location
                if current.isPunct(.colon) {
                    _ = next()
                    let upper = current.isPunct(.rbracket) ? nil : try expression()
                    _ = try expect(.rbracket, "']'")
                    e = try make(.slice(e, nil, upper), at: loc)
                    continue
                }
                let index = try expression()
                if current.isPunct(.colon) {
                    _ = next()
                    let upper = current.isPunct(.rbracket) ? nil : try expression()
                    _ = try expect(.rbracket, "']'")
                    e = try make(.slice(e, index, upper), at: loc)
                } else {
                    _ = try expect(.rbracket, "':' or ']'")
                    e = try make(.index(e, index), at: loc)
                }
            } else if current.isPunct(.lparen) {
                guard case .identifier(let name) = e.kind else {
                    throw error("only named functions can be called", at: current.location)
                }
                e = try make(.call(name, try arguments()), at: e.location)
            } else {
                return e
            }
        }
    }

    private mutating func primary() throws(RulesError) -> Expr {
        let t = current
        switch t.kind {
        case .integer(let digits):
            _ = next()
            guard let v = Int64(digits) else { throw error("integer literal out of range", at: t.location) }
            return try make(.int(v), at: t.location)
        case .float(let d):
            _ = next()
            return try make(.float(d), at: t.location)
        case .string(let s):
            _ = next()
            return try make(.string(s), at: t.location)
        case .identifier(let name):
            switch name {
            case "true": _ = next(); return try make(.bool(true), at: t.location)
            case "false": _ = next(); return try make(.bool(false), at: t.location)
            case "null": _ = next(); return try make(.null, at: t.location)
            default:
                if Self.reserved.contains(name) {
                    throw error("expected an expression, found keyword '\(name)'", at: t.location, expected: ["an expression"])
                }
                _ = next()
                return try make(.identifier(name), at: t.location)
            }
        case .punct(.lparen):
            _ = next()
            let e = try expression()
            _ = try expect(.rparen, "')'")
            return e
        case .punct(.lbracket):
            _ = next()
            var items: [Expr] = []
            while !current.isPunct(.rbracket) {
                items.append(try expression())
                guard current.isPunct(.comma) else { break }
                _ = next()
            }
            _ = try expect(.rbracket, "',' or ']'")
            return try make(.list(items), at: t.location)
        case .punct(.lbrace):
            _ = next()
            var entries: [(key: Expr, value: Expr)] = []
            while !current.isPunct(.rbrace) {
                let key = try expression()
                _ = try expect(.colon, "':'")
                let value = try expression()
                entries.append((key, value))
                guard current.isPunct(.comma) else { break }
                _ = next()
            }
            _ = try expect(.rbrace, "',' or '}'")
            return try make(.map(entries), at: t.location)
        case .path(let pieces):
            _ = next()
            return try make(.path(try pathSegments(pieces)), at: t.location)
        default:
            throw unexpected(expected: ["an expression"])
        }
    }

    private mutating func pathSegments(_ pieces: [PathLiteralPiece]) throws(RulesError) -> [[PathSegmentPart]] {
        var segments: [[PathSegmentPart]] = []
        for piece in pieces {
            switch piece {
            case .separator:
                segments.append([])
            case .text(let s):
                segments[segments.count - 1].append(.text(s))
            case .interpolation(let start, let end, let loc):
                let tokens = try Lexer.tokenize(bytes, start: start, end: end, location: loc, file: file)
                var sub = Parser(bytes: bytes, tokens: tokens, file: file, nesting: nesting)
                let e = try sub.expression()
                guard sub.current.kind == .end else { throw sub.unexpected(expected: ["')'"]) }
                segments[segments.count - 1].append(.expr(e))
            }
        }
        return segments
    }
}
