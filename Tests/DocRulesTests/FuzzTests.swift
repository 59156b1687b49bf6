import DocModel
@testable import DocRules
import DocTestSupport
import DocTestTraits
import Testing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

typealias SeededGenerator = SplitMix64

/// The parser and evaluator must turn any text into a rule set or a positioned error —
/// never crash or hang.
///
/// "Never hang" is checked without clocks: every parse runs under a ``ParseMeter`` whose budget
/// is proportional to the input's size (``stepsPerByte`` steps per byte), so an input that
/// made the lexer or parser loop, or take super-linear time, would exhaust it and fail the
/// test instead of stalling it.
@Suite(.cpuBound) struct FuzzTests {
    /// Lexer and parser steps allowed per byte of input. Ordinary files take a few; nested path
    /// interpolations are lexed once per level (at most ``Parser/maxNesting`` levels): about
    /// 60 for the deepest.
    static let stepsPerByte = 128

    static let tokens = [
        "{", "}", "(", ")", "[", "]", "match", "/", "$(", "'", "\"", "/*", "*/", "//", "**", "=", "==", "allow", "if",
        "function", "let", "return", "&&", "||", "?", ":", ".", ",", ";", "\n", "{x=**}", "{id}", "42", "1.5", "é", "\\",
        "read", "write", "get", "list", "create", "update", "delete", "request", "resource", "auth", "uid", "data",
        "true", "false", "null", "in", "is", "string", "int", "map", "!", "-", "+", "*", "%", "<", ">=", "service",
        "cloud.firestore", "rules_version", "'2'", "x", "f()", "size()", "keys()", "hasAll", "matches('.*')",
        "/databases/$(database)/documents", "get(/a/$(b))", "0x", "9999999999999999999999", "'\\u12'", "r'", "😀",
    ]

    /// The backend's own rules files: `Rules/*.rules` and `Rules/examples/*.rules`.
    static func projectRulesFiles() -> [String] {
        let fm = FileManager.default
        var out: [String] = []
        for folder in [packageRoot + "/Rules", packageRoot + "/Rules/examples"] {
            for name in ((try? fm.contentsOfDirectory(atPath: folder)) ?? []).sorted() where name.hasSuffix(".rules") {
                if let data = fm.contents(atPath: folder + "/" + name) { out.append(String(decoding: data, as: UTF8.self)) }
            }
        }
        return out
    }

    /// The rules conformance suites, whose rules files join the corpus when they are there.
    static var conformanceFolder: String? {
        if case .found(let folder) = rulesSuites.location { return folder.path }
        return nil
    }

    static func corpus() -> [String] {
        var out: [String] = projectRulesFiles() + [
            rulesSource("match /a/{b} { allow read: if request.auth.uid == b && resource.data.x in [1, 2]; }"),
            rulesSource("function f(x) { let y = x + 1; return y > 2 ? true : false; }\nmatch /{p=**} { allow write: if f(1); }"),
        ]
        let fm = FileManager.default
        if let folder = conformanceFolder, let suites = try? fm.contentsOfDirectory(atPath: folder) {
            for s in suites.sorted() {
                if let data = fm.contents(atPath: folder + "/" + s + "/firestore.rules") {
                    out.append(String(decoding: data, as: UTF8.self))
                }
            }
        }
        return out
    }

    static func mutate(_ source: String, _ rng: inout SeededGenerator) -> String {
        var scalars = Array(source.unicodeScalars)
        let edits = Int.random(in: 1...4, using: &rng)
        for _ in 0..<edits {
            let n = scalars.count
            switch Int.random(in: 0..<6, using: &rng) {
            case 0 where n > 0:   // delete a range
                let i = Int.random(in: 0..<n, using: &rng)
                let len = Int.random(in: 1...min(8, n - i), using: &rng)
                scalars.removeSubrange(i..<(i + len))
            case 1 where n > 0:   // duplicate a range
                let i = Int.random(in: 0..<n, using: &rng)
                let len = Int.random(in: 1...min(40, n - i), using: &rng)
                scalars.insert(contentsOf: scalars[i..<(i + len)], at: Int.random(in: 0...n, using: &rng))
            case 2 where n > 1:   // swap two characters
                scalars.swapAt(Int.random(in: 0..<n, using: &rng), Int.random(in: 0..<n, using: &rng))
            case 3:               // insert a token
                let t = tokens.randomElement(using: &rng)!
                scalars.insert(contentsOf: t.unicodeScalars, at: Int.random(in: 0...n, using: &rng))
            case 4:               // swap two whitespace-separated tokens
                var words = String(String.UnicodeScalarView(scalars)).split(separator: " ", omittingEmptySubsequences: false)
                if words.count > 1 {
                    words.swapAt(Int.random(in: 0..<words.count, using: &rng), Int.random(in: 0..<words.count, using: &rng))
                    scalars = Array(words.joined(separator: " ").unicodeScalars)
                }
            default:              // replace a character with a random one
                if n > 0 {
                    let c = Unicode.Scalar(UInt8.random(in: 32...126, using: &rng))
                    scalars[Int.random(in: 0..<n, using: &rng)] = c
                }
            }
        }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }

    static func soup(_ rng: inout SeededGenerator) -> String {
        (0..<Int.random(in: 1...60, using: &rng)).map { _ in tokens.randomElement(using: &rng)! }
            .joined(separator: Bool.random(using: &rng) ? " " : "")
    }

    /// Parses under a meter of ``stepsPerByte`` steps per byte; true when the parse stayed
    /// within it.
    static func parseWithinBudget(_ source: String) -> (Result<RuleSet, RulesError>, withinBudget: Bool, steps: Int) {
        let bytes = source.utf8.count + 1
        let meter = ParseMeter(budget: stepsPerByte * bytes)
        let result = ParseMeter.$current.withValue(meter) {
            Result { () throws(RulesError) in try RuleSet.parse(source: source, file: "fuzz.rules") }
        }
        return (result, !meter.isExhausted, meter.steps)
    }

    /// Parses (within the step budget); on success evaluates a few requests. Returns whether it
    /// parsed.
    @discardableResult
    static func exercise(_ source: String) -> Bool {
        var worst = 0.0
        return exercise(source, worstRatio: &worst)
    }

    /// ``exercise(_:)``, raising `worstRatio` to the parse's steps per byte.
    static func exercise(_ source: String, worstRatio: inout Double) -> Bool {
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false).count
        let (result, withinBudget, steps) = parseWithinBudget(source)
        #expect(withinBudget, "parsing \(source.utf8.count) bytes took more than \(stepsPerByte) steps per byte:\n\(source.prefix(2_000))")
        worstRatio = max(worstRatio, Double(steps) / Double(source.utf8.count + 1))
        do {
            let rules = try result.get()
            let lookup = InMemoryDocumentLookup(documents: [key("a/b"): doc("a/b", ["x": 1])])
            let stored = doc("projects/1", ["title": "t", "authors": ["abc"], "members": ["abc"]])
            for request in [
                getRequest("projects/1", auth: RulesAuth(uid: "abc"), resource: stored),
                RulesRequest(method: .update, path: try! ResourcePath("projects/1"), auth: RulesAuth(uid: "abc"),
                             resource: stored, requestResource: stored, time: testTime),
                RulesRequest(method: .list, path: try! ResourcePath("projects"), auth: nil, time: testTime,
                             query: RulesQuery(limit: 3, filters: [.where(try! FieldPath("title"), .equal, "t")])),
            ] {
                let d = rules.evaluate(request, lookup: lookup)
                _ = d.message
            }
            return true
        } catch {
            #expect(error.line >= 1 && error.line <= lines + 1, "\(error) in:\n\(source)")
            #expect(error.column >= 1, "\(error)")
            #expect(!error.message.isEmpty)
            return false
        }
    }

    @Test func mutatedRulesFiles() {
        var rng = SeededGenerator(seed: 0xD0C_CA5E)
        let corpus = Self.corpus()
        // The project's files, two inline sources and, when there, the suites' files (11).
        let least = Self.projectRulesFiles().count + (Self.conformanceFolder == nil ? 2 : 10)
        #expect(corpus.count >= least && Self.projectRulesFiles().count >= 3)
        var parsed = 0
        var total = 0
        var worst = 0.0
        for _ in 0..<250 {
            for source in corpus {
                total += 1
                if Self.exercise(Self.mutate(source, &rng), worstRatio: &worst) { parsed += 1 }
            }
        }
        #expect(total >= 250 * least)
        // Some mutations still parse (e.g. inside comments), most do not.
        #expect(parsed > 0 && parsed < total)
        print("rules fuzz: \(total) mutated files, \(parsed) parsed; at most \(Int(worst.rounded(.up))) steps per byte")
    }

    @Test func theMeterCutsARunawayParseShort() {
        // The meter works: a budget far below what a real file needs ends the parse with
        // `tooComplex` instead of a truncated rule set.
        let source = Self.projectRulesFiles()[0]
        let meter = ParseMeter(budget: source.utf8.count / 4)
        let result = ParseMeter.$current.withValue(meter) {
            Result { () throws(RulesError) in try RuleSet.parse(source: source, file: "cut.rules") }
        }
        #expect(meter.isExhausted)
        guard case .failure(let error) = result else { Issue.record("a cut parse must fail"); return }
        #expect(error.code == .tooComplex && error.message.contains("steps"))
        // The real files parse well within the budget of the fuzz tests.
        for file in Self.projectRulesFiles() {
            let (parsed, within, _) = Self.parseWithinBudget(file)
            #expect(within && (try? parsed.get()) != nil)
        }
    }

    @Test func tokenSoup() {
        var rng = SeededGenerator(seed: 42)
        for _ in 0..<2_000 {
            let s = Self.soup(&rng)
            Self.exercise(s)
            Self.exercise(rulesSource("match /a/{b} { allow read: if \(s); }"))
        }
    }

    @Test func pathologicalNesting() {
        let n = 20_000
        var worst = 0.0
        for s in [
            String(repeating: "(", count: n), String(repeating: "[", count: n), String(repeating: "{", count: n),
            String(repeating: "!", count: n) + "true", String(repeating: "-", count: n) + "1",
            String(repeating: "a.", count: n) + "b", String(repeating: "f(", count: n),
            (0..<n).map { "x\($0)" }.joined(separator: " && "), String(repeating: "x ? ", count: n) + "1",
            String(repeating: "/a/$(", count: 2_000) + "1" + String(repeating: ")", count: 2_000),
            String(repeating: "'", count: n), String(repeating: "/*", count: n), String(repeating: "[1,", count: n),
        ] {
            #expect(!Self.exercise(rulesSource("match /a/{b} { allow read: if \(s); }"), worstRatio: &worst))
        }
        let blocks = String(repeating: "match /a/{b} {", count: n) + String(repeating: "}", count: n)
        #expect(!Self.exercise(rulesSource(blocks), worstRatio: &worst))
        let functions = String(repeating: "function f() { return ", count: n)
        #expect(!Self.exercise(rulesSource(functions), worstRatio: &worst))
        // Interpolations nested as deep as allowed are lexed once per level, and still parse.
        let deep = String(repeating: "/a/$(", count: 60) + "'x'" + String(repeating: ")", count: 60)
        #expect(Self.exercise(rulesSource("match /a/{b} { allow read: if exists(\(deep)); }"), worstRatio: &worst))
        print("rules fuzz: pathological inputs take at most \(Int(worst.rounded(.up))) steps per byte")
    }
}
