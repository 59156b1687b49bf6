import DocModel
@testable import DocRules
import Testing

@Suite struct SmokeTests {
    @Test func ownerRule() throws {
        let rules = try RuleSet.parse(source: """
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /users/{userId} {
              allow read, write: if request.auth != null && request.auth.uid == userId;
            }
          }
        }
        """)
        #expect(rules.evaluate(getRequest("users/alice", auth: RulesAuth(uid: "alice"))).isAllowed)
        let denied = rules.evaluate(getRequest("users/alice", auth: RulesAuth(uid: "bob")))
        #expect(!denied.isAllowed)
        #expect(denied.error?.code == .permissionDenied)
        #expect(!rules.evaluate(getRequest("users/alice")).isAllowed)
        #expect(!rules.evaluate(getRequest("rooms/x", auth: RulesAuth(uid: "alice"))).isAllowed)
    }

    @Test func arithmetic() throws {
        #expect(value("1 + 2 * 3") == .int(7))
        #expect(value("7 / 2") == .int(3))
        #expect(value("1 == 1.0") == .bool(true))
        #expect(isEvalError("9223372036854775807 + 1"))
    }
}
