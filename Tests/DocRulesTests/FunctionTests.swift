import DocModel
@testable import DocRules
import Testing
import DocTestTraits

@Suite(.cpuBound) struct FunctionTests {
    func allowed(_ body: String, _ path: String = "a/b", auth: RulesAuth? = RulesAuth(uid: "alice")) throws -> RulesDecision {
        try RuleSet.parse(source: rulesSource(body)).evaluate(getRequest(path, auth: auth))
    }

    @Test func lexicalScoping() throws {
        let body = """
            function outer() { return database == '(default)'; }
            match /a/{x} {
              function inner(v) { return v == x && outer(); }
              allow get: if inner('b') && helper();
              match /c/{y} { allow get: if inner('b') && y == 'd'; }
            }
            match /e/{z} { allow get: if inner('b'); }
            function helper() { return true; }
        """
        #expect(try allowed(body, "a/b").isAllowed)
        #expect(!(try allowed(body, "a/x")).isAllowed)
        #expect(try allowed(body, "a/b/c/d").isAllowed)
        // `inner` is not visible from a sibling block: a warning at load, an error (deny) at evaluation.
        let rules = try RuleSet.parse(source: rulesSource(body))
        #expect(rules.warnings.contains { $0.message.contains("unknown function 'inner'") })
        let d = rules.evaluate(getRequest("e/1"))
        #expect(!d.isAllowed && d.firstError?.contains("unknown function 'inner'") == true)
    }

    @Test func innerFunctionsShadowOuterOnes() throws {
        let body = """
            function f() { return false; }
            match /a/{x} {
              function f() { return true; }
              allow get: if f();
            }
            match /b/{x} { allow get: if f(); }
        """
        #expect(try allowed(body, "a/1").isAllowed)
        #expect(!(try allowed(body, "b/1")).isAllowed)
    }

    @Test func functionsSeeOnlyTheirOwnBlocksWildcards() throws {
        // `g` is defined where `x` is not bound: `x` inside it is unknown even when called from below.
        let body = """
            function g() { return x == 'b'; }
            match /a/{x} { allow get: if g(); }
        """
        let d = try allowed(body, "a/b")
        #expect(!d.isAllowed)
        #expect(d.firstError?.contains("unknown variable 'x'") == true)
    }

    @Test func parametersShadowVariables() throws {
        let body = "function f(request) { return request == 1; }\nmatch /a/{b} { allow get: if f(1) && request.auth.uid == 'alice'; }"
        #expect(try allowed(body).isAllowed)
    }

    @Test func letsAreSequentialAndLazy() throws {
        let body = """
            function f() {
              let a = 1;
              let b = a + 1;
              let broken = {}.missing;
              return b == 2 || broken;
            }
            function g() {
              let x = {}.missing;
              return x;
            }
            match /a/{b} { allow get: if f() && !(g() == true); }
        """
        let d = try allowed(body)
        // f() is true (the broken let is never needed); g() fails, so the rule errors.
        #expect(!d.isAllowed)
        #expect(d.firstError?.contains("in function 'g'") == true)
        #expect(try allowed("function f() { let a = 1; let b = a + 1; let c = {}.m; return b == 2; }\nmatch /a/{b} { allow get: if f(); }").isAllowed)
    }

    @Test func letsCannotSeeLaterLets() throws {
        let d = try allowed("function f() { let a = b; let b = 1; return a == 1; }\nmatch /a/{b} { allow get: if f(); }")
        // `b` in the first let is the wildcard (`'b'` from the path), not the later let.
        #expect(!d.isAllowed)
    }

    @Test func callDepthLimit() throws {
        func chain(_ n: Int) -> String {
            var s = ""
            for i in 0..<n { s += "function f\(i)() { return f\(i + 1)(); }\n" }
            s += "function f\(n)() { return true; }\n"
            return s + "match /a/{b} { allow get: if f0(); }"
        }
        // f0 … f19 are 20 nested calls: allowed; one more is too deep.
        #expect(try allowed(chain(19)).isAllowed)
        let deep = try allowed(chain(20))
        #expect(!deep.isAllowed)
        #expect(deep.firstError?.contains("nested deeper than 20") == true)
    }

    @Test func argumentsAreEvaluatedInTheCaller() throws {
        let body = """
            function isOwner(rsc) { return rsc.data.owner == request.auth.uid; }
            match /docs/{d} { allow get: if isOwner(resource); }
        """
        let rules = try RuleSet.parse(source: rulesSource(body))
        let mine = doc("docs/1", ["owner": "alice"])
        #expect(rules.evaluate(getRequest("docs/1", auth: RulesAuth(uid: "alice"), resource: mine)).isAllowed)
        #expect(!rules.evaluate(getRequest("docs/1", auth: RulesAuth(uid: "bob"), resource: mine)).isAllowed)
        #expect(!rules.evaluate(getRequest("docs/1", auth: RulesAuth(uid: "alice"), resource: nil)).isAllowed)
    }

    @Test func manyCallsDoNotExhaustTheStack() throws {
        // 20 nested calls, each with a tall expression: the evaluator must stay within its bounds.
        let tall = (0..<40).map { _ in "(" }.joined() + "true" + (0..<40).map { _ in ")" }.joined()
        var s = ""
        for i in 0..<19 { s += "function f\(i)() { return \(tall) && f\(i + 1)(); }\n" }
        s += "function f19() { return \(tall); }\nmatch /a/{b} { allow get: if f0(); }"
        #expect(try allowed(s).isAllowed)
    }

    @Test func evaluationDepthIsBounded() throws {
        // The tallest expressions the parser accepts, in the deepest call chain: evaluation
        // stops with an error instead of exhausting the stack.
        // A right-nested chain: the call of the next function sits at the bottom of the tree.
        func chain(_ next: String) -> String {
            (0..<60).map { "x\($0) == 1 || (" }.joined() + next + String(repeating: ")", count: 60)
        }
        var s = ""
        for i in 0..<20 {
            let params = (0..<60).map { "x\($0)" }.joined(separator: ", ")
            let args = (0..<60).map { _ in "0" }.joined(separator: ", ")
            s += "function f\(i)(\(params)) { return \(chain(i < 19 ? "f\(i + 1)(\(args))" : "true")); }\n"
        }
        let args = (0..<60).map { _ in "0" }.joined(separator: ", ")
        s += "match /a/{b} { allow get: if f0(\(args)); }"
        let d = try allowed(s)
        #expect(!d.isAllowed)
        #expect(d.firstError?.contains("nested too deeply") == true)
    }
}
