import DocModel
@testable import DocRules
import Testing
import DocTestTraits

/// Wraps `body` in the usual service and database blocks.
func rulesSource(_ body: String, version: String? = "2") -> String {
    (version.map { "rules_version = '\($0)';\n" } ?? "") + """
    service cloud.firestore {
      match /databases/{database}/documents {
    \(body)
      }
    }
    """
}

func parseError(_ source: String) -> RulesError? {
    do {
        _ = try RuleSet.parse(source: source, file: "test.rules")
        return nil
    } catch {
        return error
    }
}

@Suite(.cpuBound) struct ParserTests {
    @Test func fileStructure() throws {
        let rules = try RuleSet.parse(source: rulesSource("""
            function top() { return true; }
            match /users/{userId} {
              allow get, list: if true;
              allow create
              allow update: if false
              match /posts/{post=**} {
                allow delete: if top();
              }
            }
        """))
        #expect(rules.version == .v2)
        #expect(rules.warnings.isEmpty)
        let db = try #require(rules.root.children.first)
        #expect(db.pattern == [.literal("databases"), .single("database"), .literal("documents")])
        #expect(db.functions["top"] != nil)
        let users = try #require(db.children.first)
        #expect(users.rules.map(\.methods) == [[.get, .list], [.create], [.update]])
        #expect(users.rules[1].condition == nil)
        #expect(users.children.first?.pattern == [.literal("posts"), .recursive("post")])
    }

    @Test func versions() throws {
        #expect(try RuleSet.parse(source: rulesSource("", version: nil)).version == .v1)
        #expect(try RuleSet.parse(source: rulesSource("", version: "1")).version == .v1)
        let e = try #require(parseError(rulesSource("", version: "3")))
        #expect(e.code == .invalidRule && e.line == 1 && e.column == 17)
    }

    @Test func methodShorthands() throws {
        let rules = try RuleSet.parse(source: rulesSource("match /a/{b} { allow read; allow write; }"))
        let block = rules.root.children[0].children[0]
        #expect(block.rules[0].methods == [.get, .list])
        #expect(block.rules[1].methods == [.create, .update, .delete])
    }

    @Test func conditionWithoutIfIsAccepted() throws {
        let rules = try RuleSet.parse(source: rulesSource("match /a/{b} { allow read: true; }"))
        #expect(rules.evaluate(getRequest("a/x")).isAllowed)
    }

    @Test func functionsWithLets() throws {
        let rules = try RuleSet.parse(source: rulesSource("""
            function f(a, b) {
              let x = a + 1;
              let y = x * b
              return y > 10
            }
            match /n/{id} { allow get: if f(2, 4) && !f(1, 2); }
        """))
        #expect(rules.evaluate(getRequest("n/1")).isAllowed)
    }

    /// (source, line, column, message fragment, expected fragment)
    @Test(arguments: [
        ("service cloud.firestore {\n  match /a {\n    allow read: if true allow write: if true\n  }\n}", 3, 25, "expected ';' or a line break", "';'"),
        ("service cloud.firestore {\n  match a {}\n}", 2, 9, "expected a path starting with '/'", "a path starting with '/'"),
        ("service cloud.firestore {\n  allow rread;\n}", 2, 9, "expected 'read'", "'read'"),
        ("service cloud.firestore {\n  match /a {\n    allow read if true;\n  }\n}", 3, 16, "expected ':'", "':'"),
        ("service cloud.firestore {\n  match /a {\n    allow read: if (1 + ;\n  }\n}", 3, 25, "expected an expression", "an expression"),
        ("service cloud.firestore {\n  match /a {\n    allow read: if f(1, 2;\n  }\n}", 3, 26, "expected ',' or ')'", "',' or ')'"),
        ("service cloud.firestore {\n  match /a {\n    allow read: if [1, 2;\n  }\n}", 3, 25, "expected ',' or ']'", "',' or ']'"),
        ("service cloud.firestore {\n  match /a {\n    allow read: if x ? 1 2;\n  }\n}", 3, 26, "expected ':'", "':'"),
        ("service cloud.firestore {\n  match /a {\n    allow read: if x is strin;\n  }\n}", 3, 25, "unknown type 'strin'", "a type name"),
        ("service cloud.firestore {\n  match /a {\n  }\n", 4, 1, "found end of file", "'}'"),
        ("service cloud.firestore {\n  match /a/{b {}\n}", 2, 12, "malformed wildcard", "'{name}'"),
        ("service cloud.firestore {\n  match /a/{b c}/d {}\n}", 2, 12, "malformed wildcard", "'{name}'"),
        ("service cloud.firestore {\n  match /a/{b\n}", 2, 12, "unterminated wildcard", "'}'"),
        ("service cloud.firestore {\n  match /a/x{b} {}\n}", 2, 12, "a wildcard must be a whole segment", "'{name}'"),
        ("service cloud.firestore {\n  match /a/{1b} {}\n}", 2, 12, "malformed wildcard", "'{name}'"),
        ("service firebase.database {\n}", 1, 1, "unsupported service 'firebase.database'", "'cloud.firestore'"),
        ("rules_version = '2'\nmatch /a {}", 2, 1, "expected 'service'", "'service'"),
        ("", 1, 1, "no 'service cloud.firestore", "'service'"),
        ("service cloud.firestore {\n  function f() { let a = 1; }\n}", 2, 29, "expected 'let' or 'return'", "'return'"),
        ("service cloud.firestore {\n  match /a { allow read: if 99999999999999999999; }\n}", 2, 29, "integer literal out of range", ""),
        ("service cloud.firestore {\n  match /a { allow read: if a.b.(c); }\n}", 2, 33, "expected a field or method name", "a field or method name"),
        ("service cloud.firestore {\n  match /a { allow read: if a.b(1)(2); }\n}", 2, 35, "only named functions can be called", ""),
        ("service cloud.firestore {\n  match /a { allow read: if return; }\n}", 2, 29, "keyword 'return'", "an expression"),
    ])
    func syntaxErrors(_ source: String, _ line: Int, _ column: Int, _ message: String, _ expected: String) throws {
        let e = try #require(parseError(source))
        #expect(e.file == "test.rules")
        #expect(e.line == line, "\(e)")
        #expect(e.column == column, "\(e)")
        #expect(e.message.contains(message), "\(e)")
        if !expected.isEmpty { #expect(e.expected.contains(expected), "\(e.expected)") }
        #expect(e.description.hasPrefix("test.rules:\(line):\(column): "))
    }

    @Test func tooManyLets() throws {
        let lets = (1...11).map { "let v\($0) = \($0);" }.joined(separator: "\n")
        let e = try #require(parseError(rulesSource("function f() {\n\(lets)\nreturn true; }")))
        #expect(e.code == .invalidRule)
        #expect(e.message.contains("at most 10 let"))
        #expect(e.line == 15)
        let ten = (1...10).map { "let v\($0) = \($0);" }.joined(separator: "\n")
        #expect(parseError(rulesSource("function f() {\n\(ten)\nreturn v10 == 10; }")) == nil)
    }

    @Test func recursionIsRejected() throws {
        let direct = try #require(parseError(rulesSource("function f(x) { return f(x); }")))
        #expect(direct.code == .invalidRule && direct.message.contains("f → f"))
        let mutual = try #require(parseError(rulesSource("""
            function a() { return b(); }
            function b() { let z = c(); return z; }
            function c() { return a(); }
        """)))
        #expect(mutual.message.contains("recursive"))
        #expect(mutual.message.contains("a → b → c → a") || mutual.message.contains("b → c → a → b") || mutual.message.contains("c → a → b → c"))
    }

    @Test func arityAndDuplicates() throws {
        let arity = try #require(parseError(rulesSource("function f(x) { return x; }\nmatch /a/{b} { allow read: if f(1, 2); }")))
        #expect(arity.message.contains("takes 1 argument") && arity.line == 5)
        let dup = try #require(parseError(rulesSource("function f() { return true; }\nfunction f() { return false; }")))
        #expect(dup.message.contains("defined twice"))
        let param = try #require(parseError(rulesSource("function f(x, x) { return x; }")))
        #expect(param.message.contains("declared twice"))
        let builtin = try #require(parseError(rulesSource("match /a/{b} { allow read: if exists(1, 2); }")))
        #expect(builtin.message.contains("'exists' takes 1 argument"))
    }

    @Test func unknownFunctionIsAWarningAndDenies() throws {
        let rules = try RuleSet.parse(source: rulesSource("match /a/{b} { allow read: if nosuch(1) || b == 'ok'; }"))
        #expect(rules.warnings.count == 1)
        #expect(rules.warnings[0].message.contains("unknown function 'nosuch'"))
        #expect(rules.warnings[0].line == 4)
        #expect(!rules.evaluate(getRequest("a/x")).isAllowed)
        #expect(rules.evaluate(getRequest("a/ok")).isAllowed)   // the error is absorbed by `|| true`
    }

    @Test func version1RecursiveWildcardInTheMiddleNeverMatches() throws {
        let rules = try RuleSet.parse(source: rulesSource("match /a/{rest=**}/b/{id} { allow read; }", version: nil))
        #expect(rules.warnings.count == 1)
        #expect(!rules.evaluate(getRequest("a/x/b/y")).isAllowed)
        let v2 = try RuleSet.parse(source: rulesSource("match /a/{rest=**}/b/{id} { allow read; }"))
        #expect(v2.warnings.isEmpty)
        #expect(v2.evaluate(getRequest("a/x/b/y")).isAllowed)
    }

    @Test func nestingLimits() throws {
        let deep = String(repeating: "(", count: 200) + "true" + String(repeating: ")", count: 200)
        let e = try #require(parseError(rulesSource("match /a/{b} { allow read: if \(deep); }")))
        #expect(e.code == .tooComplex)
        let chain = (0..<500).map { _ in "true" }.joined(separator: " && ")
        let c = try #require(parseError(rulesSource("match /a/{b} { allow read: if \(chain); }")))
        #expect(c.code == .tooComplex)
        let blocks = String(repeating: "match /a {", count: 100) + String(repeating: "}", count: 100)
        #expect(parseError(rulesSource(blocks))?.code == .tooComplex)
        // Moderate nesting is fine.
        let ok = String(repeating: "(", count: 20) + "true" + String(repeating: ")", count: 20)
        #expect(try RuleSet.parse(source: rulesSource("match /a/{b} { allow read: if \(ok); }")).evaluate(getRequest("a/b")).isAllowed)
    }

    @Test(arguments: [
        // (expression, expected value): precedence and associativity
        ("1 + 2 * 3", RulesValue.int(7)),
        ("(1 + 2) * 3", .int(9)),
        ("10 - 4 - 3", .int(3)),
        ("2 * 3 % 4", .int(2)),
        ("-2 * 3", .int(-6)),
        ("!true == false", .bool(true)),
        ("1 < 2 == true", .bool(true)),
        ("1 in [1] == true", .bool(true)),
        ("'a' is string == true", .bool(true)),
        ("1 + 1 in [2]", .bool(true)),
        ("true || false && false", .bool(true)),
        ("false && true || true", .bool(true)),
        ("true ? 1 : false ? 2 : 3", .int(1)),
        ("false ? 1 : false ? 2 : 3", .int(3)),
        ("false ? 1 : true ? 2 : 3", .int(2)),
        ("true && false ? 1 : 2", .int(2)),
        ("-9223372036854775808", .int(.min)),
        ("--1", .int(1)),
        ("[1, 2, ][1]", .int(2)),
        ("{'a': {'b': 5}}.a.b", .int(5)),
        ("{}.size()", .int(0)),
    ])
    func precedence(_ source: String, _ expected: RulesValue) throws {
        #expect(try evaluate(source) == expected)
    }
}
