import DocCache
import DocModel

/// Document data given on the command line as JSON (DocModel's typed escapes:
/// `{"$timestamp": "…"}`, `{"$ref": "…"}`, …).
enum DocumentJSON {
    /// A JSON object as write data: nested objects become nested field values, so that
    /// `--merge` merges them field by field, as Firestore does.
    static func fields(_ text: String, json: Bool) throws -> [String: FieldValue] {
        let value: Value
        do {
            value = try Value(json: text)
        } catch {
            throw CommandFailure(exitCode: CommandFailure.usage, code: "invalidArgument",
                                 message: "the document data is not valid JSON: \(error.message)", json: json)
        }
        guard case .map(let map) = value else {
            throw CommandFailure(exitCode: CommandFailure.usage, code: "invalidArgument",
                                 message: "the document data must be a JSON object, e.g. '{\"name\": \"Lobby\"}'", json: json)
        }
        return map.mapValues(fieldValue)
    }

    private static func fieldValue(_ value: Value) -> FieldValue {
        if case .map(let inner) = value, !inner.isEmpty { return .map(inner.mapValues(fieldValue)) }
        return .value(value)
    }
}
