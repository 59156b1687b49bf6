@testable import DocRules
import Testing
import DocTestTraits

@Suite(.cpuBound) struct RegexTests {
    /// (pattern, input, whole-string match?)
    @Test(arguments: [
        ("abc", "abc", true), ("abc", "abcd", false), ("abc", "xabc", false), ("a.c", "abc", true), ("a.c", "a\nc", false),
        ("(?s)a.c", "a\nc", true), ("a*", "", true), ("a*", "aaaa", true), ("a+", "", false), ("a?b", "b", true),
        ("a{3}", "aaa", true), ("a{3}", "aa", false), ("a{2,}", "aaaaa", true), ("a{2,3}", "aaaa", false),
        ("a{,3}", "a{,3}", true), ("x{", "x{", true),
        ("[a-c]+", "abcab", true), ("[^a-c]", "d", true), ("[^a-c]", "a", false), ("[]a]", "]", true),
        ("[a-]", "-", true), ("[\\d.]+", "1.5", true), ("\\d+", "123", true), ("\\d", "x", false), ("\\D", "x", true),
        ("\\w+", "ab_9", true), ("\\W", "-", true), ("\\s", "\t", true), ("\\S+", "ab", true),
        ("[[:alpha:]]+", "Abc", true), ("[[:digit:]]", "a", false), ("[[:^digit:]]", "a", true),
        ("cat|dog", "dog", true), ("cat|dog", "cats", false), ("(cat|dog)s?", "cats", true), ("(?:ab)+", "abab", true),
        ("(?P<y>\\d{4})-(?<m>\\d{2})", "2024-05", true),
        ("^abc$", "abc", true), ("a^b", "ab", false), ("\\Aab\\z", "ab", true),
        ("(?i)hello", "HeLLo", true), ("(?i:h)ello", "Hello", true), ("h(?i:E)llo", "hEllo", true), ("hello", "HELLO", false),
        ("(?i)[a-z]+", "ABC", true), ("(?i)é", "É", true),
        ("\\bfoo\\b", "foo", true), ("a\\Bb", "ab", true),
        ("\\.", ".", true), ("\\.", "a", false), ("\\x41", "A", true), ("\\x{1F600}", "😀", true), ("\\n", "\n", true),
        ("\\pL+", "héllo", true), ("\\p{Lu}", "A", true), ("\\p{Lu}", "a", false), ("\\PL", "1", true), ("\\PL", "a", false),
        ("\\p{N}", "٣", true), (".", "😀", true), ("..", "😀", false), ("é", "é", true),
        ("[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}", "john.doe@example.com", true),
        ("^[a-zA-Z0-9_]{3,16}$", "ab", false), ("^[a-zA-Z0-9_]{3,16}$", "user_01", true),
        ("(a|ab)(c|bcd)(d*)", "abcd", true), ("(a*)*b", "aaab", true), ("(a*)*b", "aaaa", false), ("(|a)+", "aa", true),
        ("a*?", "aaa", true), ("a+?b", "aab", true),
    ])
    func wholeMatch(_ pattern: String, _ input: String, _ expected: Bool) throws {
        let re = try RulesRegex(pattern)
        #expect(re.matchesWhole(input) == expected, "\(pattern) vs \(input)")
    }

    @Test(arguments: [
        "(", ")", "a)", "[a", "[z-a]", "*a", "a**", "a{2}{3}", "a{1001}", "\\1", "(?=a)", "(?!a)", "(?<=a)b", "\\p{Nope}",
        "\\q", "(?z)", "\\", "[[:nope:]]", "\\x{110000}",
    ])
    func invalidPatterns(_ pattern: String) {
        #expect(throws: RulesRegex.SyntaxError.self) { try RulesRegex(pattern) }
    }

    @Test func searchIsLeftmostFirst() throws {
        let input = Array("xxabcabc".unicodeScalars)
        #expect(try RulesRegex("abc").firstMatch(in: input, from: 0) == 2..<5)
        #expect(try RulesRegex("abc").firstMatch(in: input, from: 3) == 5..<8)
        #expect(try RulesRegex("a|ab").firstMatch(in: input, from: 0) == 2..<3)
        #expect(try RulesRegex("ab|a").firstMatch(in: input, from: 0) == 2..<4)
        #expect(try RulesRegex("b*").firstMatch(in: input, from: 0) == 0..<0)
        #expect(try RulesRegex("z").firstMatch(in: input, from: 0) == nil)
    }

    @Test func splitAndReplace() throws {
        func split(_ s: String, _ p: String) throws -> [String] { StringMethods.split(s, try RulesRegex(p)) }
        func replace(_ s: String, _ p: String, _ r: String) throws -> String { StringMethods.replace(s, try RulesRegex(p), with: r) }
        #expect(try split("a/b/c", "/") == ["a", "b", "c"])
        #expect(try split("/a/", "/") == ["", "a", ""])
        #expect(try split("abc", "") == ["a", "b", "c"])
        #expect(try split("", ",") == [""])
        #expect(try split("a1b22c333", "\\d+") == ["a", "b", "c", ""])
        #expect(try split("a.b", ".") == ["", "", "", ""])
        #expect(try replace("banana", "a", "o") == "bonono")
        #expect(try replace("banana", "ana", "x") == "bxna")
        #expect(try replace("abc", "", "-") == "-a-b-c-")
        #expect(try replace("aaa", "a*", "-") == "-")
        #expect(try replace("abc", "x", "-") == "abc")
        #expect(try replace("a.b.c", "\\.", "") == "abc")
    }

    @Test func linearTimeOnPathologicalPatterns() throws {
        // Exponential for a backtracking engine; linear here.
        let input = String(repeating: "a", count: 5_000)
        let r1 = try RulesRegex("(a*)*b"), r2 = try RulesRegex("(a|aa)+$b"), r3 = try RulesRegex("(a|a)*")
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            #expect(!r1.matchesWhole(input))
            #expect(!r2.matchesWhole(input))
            #expect(r3.matchesWhole(input))
        }
        #expect(elapsed < .seconds(5))
    }

    @Test func programSizeIsBounded() {
        #expect(throws: RulesRegex.SyntaxError.self) { try RulesRegex("((a{1000}){1000}){1000}") }
    }
}
