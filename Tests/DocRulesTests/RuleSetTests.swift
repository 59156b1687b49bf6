import DocModel
@testable import DocRules
import Testing
import DocTestTraits

@Suite(.cpuBound) struct RuleSetTests {
    let rules = try! RuleSet.parse(source: """
    rules_version = '2';
    service cloud.firestore {
      match /databases/{database}/documents {
        match /users/{userId} {
          allow read, write: if request.auth != null && request.auth.uid == userId;
        }
        match /rooms/{room} {
          allow create: if request.resource.data.owner == request.auth.uid
                        && request.resource.data.keys().hasOnly(['owner', 'topic']);
          allow update: if resource.data.owner == request.auth.uid
                        && request.resource.data.diff(resource.data).affectedKeys().hasOnly(['topic']);
          allow delete: if resource.data.owner == request.auth.uid && request.resource == null;
        }
      }
    }
    """, file: "app.rules")

    @Test func ownerRule() {
        #expect(rules.evaluate(getRequest("users/alice", auth: RulesAuth(uid: "alice"))).isAllowed)
        let denied = rules.evaluate(getRequest("users/alice", auth: RulesAuth(uid: "bob")))
        #expect(!denied.isAllowed)
        #expect(denied.error?.code == .permissionDenied)
        #expect(denied.error?.message == denied.message)
        #expect(denied.outcomes.count == 1)
        #expect(denied.outcomes[0].line == 5 && denied.outcomes[0].column == 7)
        #expect(denied.outcomes[0].methods == "read, write")
        #expect(denied.outcomes[0].matchPath == "/databases/{database}/documents/users/{userId}")
        #expect(denied.outcomes[0].result == .denied)
        let unauthenticated = rules.evaluate(getRequest("users/alice"))
        #expect(!unauthenticated.isAllowed)
        #expect(unauthenticated.outcomes[0].result == .denied)   // `null != null` is false: no error
        let none = rules.evaluate(getRequest("rooms/x/y/z", auth: RulesAuth(uid: "alice")))
        #expect(none.outcomes.isEmpty && none.message.hasSuffix("no rule allows it"))
    }

    @Test func writes() {
        let alice = RulesAuth(uid: "alice")
        let stored = doc("rooms/r", ["owner": "alice", "topic": "a"])
        func write(_ method: RulesMethod, _ after: [String: Value]?, auth: RulesAuth? = alice, resource: Document? = nil) -> Bool {
            rules.evaluate(RulesRequest(method: method, path: try! ResourcePath("rooms/r"), auth: auth, resource: resource,
                                        requestResource: after.map { doc("rooms/r", $0) }, time: testTime)).isAllowed
        }
        #expect(write(.create, ["owner": "alice", "topic": "t"]))
        #expect(!write(.create, ["owner": "alice", "topic": "t", "extra": 1]))
        #expect(!write(.create, ["owner": "bob"]))
        #expect(write(.update, ["owner": "alice", "topic": "b"], resource: stored))
        #expect(!write(.update, ["owner": "bob", "topic": "a"], resource: stored))
        #expect(!write(.update, ["owner": "alice", "topic": "b"], auth: RulesAuth(uid: "bob"), resource: stored))
        #expect(write(.delete, nil, resource: stored))
        #expect(!write(.delete, nil, resource: nil))
    }

    @Test func parseErrorsAsDocErrors() {
        do {
            _ = try RuleSet.parse(source: "service cloud.firestore {\n  match /a { allow read: if ; }\n}", file: "bad.rules")
            Issue.record("expected a parse error")
        } catch {
            #expect(error.code == .syntax)
            #expect(error.docError.code == .invalidArgument)
            #expect(error.docError.location == "bad.rules:2:29")
            #expect(error.description == "bad.rules:2:29: expected an expression, found ';'")
        }
    }

    @Test func readAndWriteExpand() {
        #expect(RulesMethod.expand("read") == [.get, .list])
        #expect(RulesMethod.expand("write") == [.create, .update, .delete])
        #expect(RulesMethod.expand("patch") == nil)
    }
}
