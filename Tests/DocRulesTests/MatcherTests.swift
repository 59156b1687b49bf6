import DocModel
@testable import DocRules
import Testing
import DocTestTraits

@Suite(.cpuBound) struct MatcherTests {
    func known(_ path: String) -> [TargetSegment] { path.split(separator: "/").map { .known(String($0)) } }

    func ends(_ pattern: [PatternSegment], _ path: String, _ version: RulesVersion) -> [Int] {
        Matcher(version: version).match(pattern, known(path), from: 0, base: [:]).map(\.0).sorted()
    }

    @Test func literalsAndSingleWildcards() {
        #expect(ends([.literal("a"), .single("x")], "a/b", .v2) == [2])
        #expect(ends([.literal("a"), .single("x")], "b/b", .v2) == [])
        #expect(ends([.literal("a"), .single("x")], "a", .v2) == [])
        let m = Matcher(version: .v2).match([.literal("users"), .single("uid")], known("users/alice"), from: 0, base: ["db": .string("d")])
        #expect(m.count == 1)
        #expect(m[0].1["uid"] == .string("alice"))
        #expect(m[0].1["db"] == .string("d"))
    }

    @Test func recursiveWildcardVersion2MatchesZeroOrMoreAnywhere() {
        #expect(ends([.recursive("r")], "a/b/c", .v2) == [0, 1, 2, 3])
        #expect(ends([.literal("a"), .recursive("r"), .literal("c")], "a/c", .v2) == [2])
        #expect(ends([.literal("a"), .recursive("r"), .literal("c")], "a/b/b/c", .v2) == [4])
        let m = Matcher(version: .v2).match([.literal("a"), .recursive("r"), .literal("c")], known("a/x/y/c"), from: 0, base: [:])
        #expect(m.first?.1["r"] == .path(RulesPath(segments: ["x", "y"])))
    }

    @Test func recursiveWildcardVersion1MatchesOneOrMoreAtTheEnd() {
        #expect(ends([.recursive("r")], "a/b/c", .v1) == [3])
        #expect(ends([.literal("a"), .recursive("r")], "a", .v1) == [])
        #expect(ends([.literal("a"), .recursive("r")], "a/b", .v1) == [2])
        #expect(ends([.literal("a"), .recursive("r"), .literal("c")], "a/b/c", .v1) == [])
    }

    func rules(_ body: String, version: String?) throws -> RuleSet {
        try RuleSet.parse(source: rulesSource(body, version: version))
    }

    @Test func nestedBlocksAndVersions() throws {
        let body = """
            match /cities/{city} {
              allow get: if city == 'sf';
              match /landmarks/{l} { allow get: if city == 'sf' && l == 'tower'; }
            }
            match /{all=**} { allow get: if all == /docs/readme; }
        """
        for version in [nil, "2"] {
            let r = try rules(body, version: version)
            #expect(r.evaluate(getRequest("cities/sf")).isAllowed)
            #expect(!r.evaluate(getRequest("cities/la")).isAllowed)
            #expect(r.evaluate(getRequest("cities/sf/landmarks/tower")).isAllowed)
            #expect(!r.evaluate(getRequest("cities/sf/landmarks/bridge")).isAllowed)
            #expect(r.evaluate(getRequest("docs/readme")).isAllowed)
        }
    }

    @Test func version2AllowsRulesAfterARecursiveWildcard() throws {
        let body = "match /{path=**}/posts/{post} { allow get: if post == 'p1'; }"
        let v2 = try rules(body, version: "2")
        #expect(v2.evaluate(getRequest("posts/p1")).isAllowed)
        #expect(v2.evaluate(getRequest("users/u/posts/p1")).isAllowed)
        #expect(v2.evaluate(getRequest("a/b/c/d/posts/p1")).isAllowed)
        #expect(!v2.evaluate(getRequest("users/u/posts/p2")).isAllowed)
        let v1 = try rules(body, version: nil)
        #expect(!v1.evaluate(getRequest("users/u/posts/p1")).isAllowed)
    }

    @Test func rulesOnlyApplyToCompleteMatches() throws {
        let r = try rules("match /users/{u} { allow get; }\nallow get;", version: "2")
        #expect(r.evaluate(getRequest("users/x")).isAllowed)
        #expect(!r.evaluate(getRequest("users/x/private/y")).isAllowed)
        #expect(!r.evaluate(getRequest("other/x")).isAllowed)
    }

    @Test func overlappingMatchesAnyGrants() throws {
        let r = try rules("""
            match /a/{x} { allow get: if false; }
            match /a/{y} { allow get: if y == 'ok'; }
            match /{p=**} { allow get: if {}.missing; }
        """, version: "2")
        let d = r.evaluate(getRequest("a/ok"))
        #expect(d.isAllowed)
        #expect(d.grantingRule?.matchPath == "/databases/{database}/documents/a/{y}")
        let denied = r.evaluate(getRequest("a/no"))
        #expect(!denied.isAllowed)
        #expect(denied.outcomes.count == 3)
        #expect(denied.firstError?.contains("no field 'missing'") == true)
        #expect(denied.message.contains("permission denied: get on /databases/(default)/documents/a/no"))
    }

    @Test func databaseWildcardBindsTheDatabase() throws {
        let r = try rules("match /x/{id} { allow get: if database == 'tenant1'; }", version: "2")
        var req = getRequest("x/1")
        req.database = "tenant1"
        #expect(r.evaluate(req).isAllowed)
        #expect(!r.evaluate(getRequest("x/1")).isAllowed)
    }

    @Test func invalidRequestPathsAreDenied() throws {
        let r = try rules("match /{p=**} { allow read, write; }", version: "2")
        let odd = RulesRequest(method: .get, path: try ResourcePath("users"), auth: nil, time: testTime)
        #expect(!r.evaluate(odd).isAllowed)
        let evenList = RulesRequest(method: .list, path: try ResourcePath("users/a"), auth: nil, time: testTime)
        #expect(!r.evaluate(evenList).isAllowed)
        #expect(r.evaluate(RulesRequest(method: .list, path: try ResourcePath("users"), auth: nil, time: testTime)).isAllowed)
    }
}
