import DocModel
@testable import DocRules

/// A fixed request time for tests: 2024-05-01T12:00:00Z.
let testTime = try! Timestamp(rfc3339: "2024-05-01T12:00:00Z")

func key(_ path: String) -> DocumentKey { try! DocumentKey(path) }

func doc(_ path: String, _ fields: [String: Value]) -> Document {
    Document(key: key(path), data: ObjectValue(fields), version: SnapshotVersion(microseconds: 1))
}

func getRequest(_ path: String, auth: RulesAuth? = nil, resource: Document? = nil) -> RulesRequest {
    RulesRequest(method: .get, path: try! ResourcePath(path), auth: auth, resource: resource, time: testTime)
}

/// Evaluates an expression in a plain request context (`request.auth.uid == 'alice'`).
func evaluate(_ source: String, auth: RulesAuth? = RulesAuth(uid: "alice"), resource: Document? = nil,
              bindings: [String: RulesValue] = [:], lookup: InMemoryDocumentLookup = InMemoryDocumentLookup()) throws -> RulesValue {
    let request = RulesRequest(method: .get, path: try ResourcePath("users/alice"), auth: auth, resource: resource, time: testTime)
    return try Evaluator.evaluate(expression: source, request: request, lookup: lookup, bindings: bindings)
}

/// The expression's value, or `nil` if evaluating it is an error.
func value(_ source: String) -> RulesValue? { try? evaluate(source) }

/// Whether evaluating the expression is an error (but it parses).
func isEvalError(_ source: String) -> Bool {
    do {
        _ = try evaluate(source)
        return false
    } catch is RulesError {
        return false
    } catch {
        return true
    }
}
