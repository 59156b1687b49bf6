import DocModel
@testable import DocRules
import Testing
import DocTestTraits

/// Rules are not filters: a list is allowed only if the rules allow every document the query
/// could return.
@Suite(.cpuBound) struct ListRuleTests {
    let rules = try! RuleSet.parse(source: rulesSource("""
        match /posts/{post} {
          allow list: if resource.data.owner == request.auth.uid;
        }
        match /public/{doc} {
          allow list: if resource.data.visibility == 'public' && request.query.limit <= 50;
        }
        match /scores/{s} {
          allow list: if resource.data.score >= 10 && resource.data.score < 100;
        }
        match /tagged/{t} {
          allow list: if 'news' in resource.data.tags;
        }
        match /status/{s} {
          allow list: if resource.data.state in ['open', 'pending'];
        }
        match /notdeleted/{d} {
          allow list: if resource.data.deleted != true;
        }
        match /nested/{d} {
          allow list: if resource.data.meta.team == request.auth.token.team;
        }
        match /anyone/{d} {
          allow list: if true;
        }
        match /byid/{d} {
          allow list: if d == request.auth.uid;
        }
        match /typed/{d} {
          allow list: if resource.data.n is number && resource.data.n > 0;
        }
        match /either/{d} {
          allow list: if resource.data.a == 1 || request.auth.uid == 'admin';
        }
        match /ternary/{d} {
          allow list: if resource.data.kind == 'a' ? true : resource.data.kind == 'b';
        }
        match /exists/{d} {
          allow list: if resource != null && resource.data.keys().hasAll(['x']);
        }
        match /viaGet/{d} {
          allow list: if get(/databases/$(database)/documents/teams/$(resource.data.team)).data.open == true;
        }
        match /geta/{d} {
          allow list: if resource.data.get('level', 0) < 3;
        }
        match /{path=**}/comments/{c} {
          allow list: if resource.data.approved == true;
        }
    """))

    func list(_ collection: String, _ filters: [Filter] = [], limit: Int64? = nil, uid: String? = "alice",
              token: [String: Value] = [:], group: Bool = false) -> RulesDecision {
        let query = RulesQuery(limit: limit, filters: filters, collectionGroup: group)
        let request = RulesRequest(method: .list, path: try! ResourcePath(collection), auth: uid.map { RulesAuth(uid: $0, token: token) },
                                   time: testTime, query: query)
        return rules.evaluate(request, lookup: InMemoryDocumentLookup(documents: [key("teams/t1"): doc("teams/t1", ["open": true])]))
    }

    func f(_ field: String, _ op: FieldFilter.Operator, _ value: Value) -> Filter { .where(try! FieldPath(field), op, value) }

    @Test func equalityConstraintSatisfiesTheRule() {
        #expect(list("posts", [f("owner", .equal, "alice")]).isAllowed)
        #expect(!list("posts", [f("owner", .equal, "bob")]).isAllowed)
        let unconstrained = list("posts")
        #expect(!unconstrained.isAllowed)
        #expect(unconstrained.outcomes.first?.result == .undecided)
        #expect(unconstrained.message.contains("rules are not filters"))
        #expect(!list("posts", [f("other", .equal, "alice")]).isAllowed)
        #expect(!list("posts", [f("owner", .equal, "alice")], uid: nil).isAllowed)
    }

    @Test func queryLimitIsChecked() {
        #expect(list("public", [f("visibility", .equal, "public")], limit: 50).isAllowed)
        #expect(!list("public", [f("visibility", .equal, "public")], limit: 51).isAllowed)
        #expect(!list("public", [f("visibility", .equal, "public")]).isAllowed)   // no limit: null <= 50 is an error
        #expect(!list("public", [f("visibility", .equal, "private")], limit: 10).isAllowed)
    }

    @Test func inequalityConstraintsImplyComparisons() {
        #expect(list("scores", [f("score", .greaterThanOrEqual, 10), f("score", .lessThan, 100)]).isAllowed)
        #expect(list("scores", [f("score", .greaterThan, 20), f("score", .lessThanOrEqual, 50)]).isAllowed)
        #expect(list("scores", [f("score", .greaterThan, 9.5), f("score", .lessThan, 99)]).isAllowed == false)
        #expect(!list("scores", [f("score", .greaterThanOrEqual, 10)]).isAllowed)
        #expect(!list("scores", [f("score", .greaterThanOrEqual, 5), f("score", .lessThan, 100)]).isAllowed)
        #expect(list("scores", [f("score", .equal, 42)]).isAllowed)
        #expect(!list("scores", [f("score", .equal, 100)]).isAllowed)
    }

    @Test func arrayContainsAndIn() {
        #expect(list("tagged", [f("tags", .arrayContains, "news")]).isAllowed)
        #expect(!list("tagged", [f("tags", .arrayContains, "sport")]).isAllowed)
        #expect(list("tagged", [f("tags", .arrayContainsAny, ["news"])]).isAllowed)
        #expect(!list("tagged", [f("tags", .arrayContainsAny, ["news", "sport"])]).isAllowed)
        #expect(list("status", [f("state", .in, ["open", "pending"])]).isAllowed)
        #expect(list("status", [f("state", .in, ["open"])]).isAllowed)
        #expect(!list("status", [f("state", .in, ["open", "closed"])]).isAllowed)
        #expect(list("status", [f("state", .equal, "pending")]).isAllowed)
        #expect(!list("status", [f("state", .notIn, ["closed"])]).isAllowed)
    }

    @Test func notEqualConstraints() {
        #expect(list("notdeleted", [f("deleted", .notEqual, true)]).isAllowed)
        #expect(list("notdeleted", [f("deleted", .notIn, [true, "x"])]).isAllowed)
        #expect(list("notdeleted", [f("deleted", .equal, false)]).isAllowed)
        #expect(!list("notdeleted", [f("deleted", .notEqual, false)]).isAllowed)
        #expect(!list("notdeleted").isAllowed)
    }

    @Test func nestedFields() {
        #expect(list("nested", [f("meta.team", .equal, "red")], token: ["team": "red"]).isAllowed)
        #expect(!list("nested", [f("meta.team", .equal, "red")], token: ["team": "blue"]).isAllowed)
        #expect(!list("nested", [f("meta.other", .equal, "red")], token: ["team": "red"]).isAllowed)
    }

    @Test func unconditionalAndDocumentID() {
        #expect(list("anyone").isAllowed)
        #expect(!list("byid").isAllowed)
        #expect(list("byid", [f("__name__", .equal, .reference(key("byid/alice")))]).isAllowed)
        #expect(!list("byid", [f("__name__", .in, [.reference(key("byid/alice")), .reference(key("byid/bob"))])]).isAllowed)
        #expect(!list("byid", [f("__name__", .equal, .reference(key("other/alice")))]).isAllowed)
    }

    @Test func typeChecksFromConstraints() {
        #expect(list("typed", [f("n", .greaterThan, 0)]).isAllowed)
        #expect(list("typed", [f("n", .greaterThan, 5.5)]).isAllowed)
        #expect(!list("typed", [f("n", .greaterThan, "a")]).isAllowed)
        #expect(!list("typed", [f("n", .notEqual, 0)]).isAllowed)
    }

    @Test func threeValuedLogic() {
        #expect(list("either", [], uid: "admin").isAllowed)         // unknown || true
        #expect(!list("either", [], uid: "alice").isAllowed)        // unknown || false
        #expect(list("either", [f("a", .equal, 1)], uid: "alice").isAllowed)
        #expect(list("ternary", [f("kind", .equal, "a")]).isAllowed)
        #expect(list("ternary", [f("kind", .equal, "b")]).isAllowed)
        #expect(list("ternary", [f("kind", .in, ["a", "b"])]).isAllowed)
        #expect(!list("ternary", [f("kind", .equal, "c")]).isAllowed)
        #expect(!list("ternary").isAllowed)
    }

    @Test func unknownDocumentShapeDenies() {
        // keys() of an unknown document cannot be decided.
        #expect(!list("exists", [f("x", .equal, 1)]).isAllowed)
        #expect(list("viaGet", [f("team", .equal, "t1")]).isAllowed)
        #expect(!list("viaGet").isAllowed)
        #expect(list("geta", [f("level", .lessThan, 3)]).isAllowed)   // every returned document has level < 3
        #expect(list("geta", [f("level", .equal, 2)]).isAllowed)
    }

    @Test func orQueriesNeedEveryDisjunct() {
        #expect(list("posts", [.or([f("owner", .equal, "alice"), .and([f("owner", .equal, "alice"), f("x", .equal, 1)])])]).isAllowed)
        #expect(!list("posts", [.or([f("owner", .equal, "alice"), f("x", .equal, 1)])]).isAllowed)
    }

    @Test func collectionGroupQueries() {
        #expect(list("comments", [f("approved", .equal, true)], group: true).isAllowed)
        #expect(!list("comments", [], group: true).isAllowed)
        #expect(list("users/u1/comments", [f("approved", .equal, true)], group: true).isAllowed)
        // A collection query on one comments collection is matched by the same rule.
        #expect(list("users/u1/comments", [f("approved", .equal, true)]).isAllowed)
        // No rule covers every `posts` collection.
        #expect(!list("posts", [f("owner", .equal, "alice")], group: true).isAllowed)
        // Version 1 rules never allow collection-group queries.
        let v1 = try! RuleSet.parse(source: rulesSource("match /{p=**} { allow read; }", version: nil))
        let request = RulesRequest(method: .list, path: try! ResourcePath("comments"), auth: nil, time: testTime,
                                   query: RulesQuery(collectionGroup: true))
        #expect(!v1.evaluate(request).isAllowed)
        #expect(v1.evaluate(RulesRequest(method: .list, path: try! ResourcePath("comments"), auth: nil, time: testTime)).isAllowed)
    }

    @Test func tooManyCombinations() {
        let values: [Value] = (0..<11).map { .string("v\($0)") }
        let d = list("status", [f("state", .in, .array(values)), f("other", .in, .array(values))])
        #expect(!d.isAllowed)
        #expect(d.message.contains("cases"))
    }

    @Test func fromADocModelQuery() throws {
        let query = try Query(collection: "posts").filter("owner", .equal, "alice").limit(to: 10)
        #expect(rules.evaluate(RulesRequest(listing: query, auth: RulesAuth(uid: "alice"), time: testTime)).isAllowed)
        #expect(!rules.evaluate(RulesRequest(listing: query, auth: RulesAuth(uid: "bob"), time: testTime)).isAllowed)
        let group = try Query(collectionGroup: "comments").filter("approved", .equal, true)
        #expect(rules.evaluate(RulesRequest(listing: group, auth: nil, time: testTime)).isAllowed)
    }

    @Test func requestQueryFields() throws {
        let r = try RuleSet.parse(source: rulesSource("""
            match /q/{d} {
              allow list: if request.query.limit == 5 && request.query.offset == null
                          && request.query.orderBy.name == 'DESC' && request.method == 'list';
            }
        """))
        let query = RulesQuery(limit: 5, orderBy: [OrderBy(try FieldPath("name"), .descending)])
        let req = RulesRequest(method: .list, path: try ResourcePath("q"), auth: nil, time: testTime, query: query)
        #expect(r.evaluate(req).isAllowed)
    }
}
