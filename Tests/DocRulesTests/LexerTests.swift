@testable import DocRules
import Testing
import DocTestTraits

@Suite(.cpuBound) struct LexerTests {
    func lex(_ s: String) throws -> [TokenKind] {
        let bytes = Array(s.utf8)
        return try Lexer.tokenize(bytes, start: 0, end: bytes.count, location: SourceLocation(line: 1, column: 1, offset: 0), file: "t")
            .map(\.kind).dropLast()
    }

    func lexError(_ s: String) -> RulesError? {
        let bytes = Array(s.utf8)
        do {
            _ = try Lexer.tokenize(bytes, start: 0, end: bytes.count, location: SourceLocation(line: 1, column: 1, offset: 0), file: "t")
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        ("abc _x y1", [TokenKind.identifier("abc"), .identifier("_x"), .identifier("y1")]),
        ("42 0 0x1F", [.integer("42"), .integer("0"), .integer("31")]),
        ("1.5 2e3 1.25E-2", [.float(1.5), .float(2000), .float(0.0125)]),
        ("'a' \"b\"", [.string("a"), .string("b")]),
        (#"'it\'s' "q\"q" '\n\t\\'"#, [.string("it's"), .string("q\"q"), .string("\n\t\\")]),
        (#"'\x41\u00e9\U0001F600\101'"#, [.string("Aé😀A")]),
        (#"r'a\d'"#, [.string("a\\d")]),
        ("== != <= >= < > && || ! = ? : . , ; ( ) [ ] { } + - * a / %", [
            .punct(.eq), .punct(.ne), .punct(.le), .punct(.ge), .punct(.lt), .punct(.gt), .punct(.and),
            .punct(.or), .punct(.not), .punct(.assign), .punct(.question), .punct(.colon), .punct(.dot),
            .punct(.comma), .punct(.semicolon), .punct(.lparen), .punct(.rparen), .punct(.lbracket),
            .punct(.rbracket), .punct(.lbrace), .punct(.rbrace), .punct(.plus), .punct(.minus),
            .punct(.star), .identifier("a"), .punct(.slash), .punct(.percent),
        ]),
        ("a // comment\n b /* block\n comment */ c", [.identifier("a"), .identifier("b"), .identifier("c")]),
        ("a / b", [.identifier("a"), .punct(.slash), .identifier("b")]),
        ("x == /users/$(id)", [.identifier("x"), .punct(.eq), .path([.separator, .text("users"), .separator, .interpolation(start: 14, end: 16, location: SourceLocation(line: 1, column: 15, offset: 14))])]),
        ("(/databases/(default)/documents)", [.punct(.lparen), .path([.separator, .text("databases"), .separator, .text("(default)"), .separator, .text("documents")]), .punct(.rparen)]),
        ("match /users/{userId}/posts/{p=**} {", [.identifier("match"), .matchPath("/users/{userId}/posts/{p=**}"), .punct(.lbrace)]),
        ("match /a{", [.identifier("match"), .matchPath("/a"), .punct(.lbrace)]),
        ("6 / 2", [.integer("6"), .punct(.slash), .integer("2")]),
        ("f() / 2", [.identifier("f"), .punct(.lparen), .punct(.rparen), .punct(.slash), .integer("2")]),
        ("d.in / 2", [.identifier("d"), .punct(.dot), .identifier("in"), .punct(.slash), .integer("2")]),
        ("if /a", [.identifier("if"), .path([.separator, .text("a")])]),
        ("return /a", [.identifier("return"), .path([.separator, .text("a")])]),
    ])
    func tokens(_ source: String, _ expected: [TokenKind]) throws {
        #expect(try lex(source) == expected)
    }

    @Test func newlineFlags() throws {
        let bytes = Array("a\n  b c /* x\n */ d".utf8)
        let tokens = try Lexer.tokenize(bytes, start: 0, end: bytes.count, location: SourceLocation(line: 1, column: 1, offset: 0), file: "t")
        #expect(tokens.map(\.newlineBefore) == [false, true, false, true, false])
        #expect(tokens[1].location.line == 2 && tokens[1].location.column == 3)
        #expect(tokens[3].location.line == 3 && tokens[3].location.column == 5)
    }

    @Test func columnsCountScalars() throws {
        let bytes = Array("'é😀' x".utf8)
        let tokens = try Lexer.tokenize(bytes, start: 0, end: bytes.count, location: SourceLocation(line: 1, column: 1, offset: 0), file: "t")
        #expect(tokens[1].location.column == 6)
    }

    @Test(arguments: [
        ("'abc", 1, 1, "unterminated string"),
        ("x = 'a\nb'", 1, 5, "unterminated string"),
        ("a /* never", 1, 3, "unterminated comment"),
        ("a & b", 1, 3, "unexpected '&'"),
        ("a | b", 1, 3, "unexpected '|'"),
        ("  #", 1, 3, "unexpected character '#'"),
        ("\n  'bad \\q'", 2, 8, "invalid escape"),
        ("'\\x4'", 1, 2, "invalid escape"),
        ("12abc", 1, 3, "unexpected character after number"),
        ("0x", 1, 1, "hexadecimal"),
        ("x == /a/ b", 1, 8, "empty path segment"),
        ("get(/a/$(b", 1, 8, "unterminated '$('"),
        ("match /a/{b", 1, 10, "unterminated wildcard"),
        ("é", 1, 1, "unexpected character 'é'"),
    ])
    func errors(_ source: String, _ line: Int, _ column: Int, _ message: String) throws {
        let e = try #require(lexError(source))
        #expect(e.line == line)
        #expect(e.column == column)
        #expect(e.message.contains(message), "\(e.message)")
        #expect(e.code == .syntax)
    }
}
