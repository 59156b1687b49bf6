import DocCache
import DocModel

/// Document data given on the command line as JSON: DocModel's typed escapes
/// (`{"$timestamp": "…"}`, `{"$ref": "…"}`, …) and the field transforms (`{"$increment": 1}`,
/// `{"$serverTimestamp": true}`, `{"$arrayUnion": […]}`, `{"$arrayRemove": […]}`,
/// `{"$delete": true}`); see ``JSONWriteField``.
enum DocumentJSON {
    /// A JSON object as write data: nested objects become nested field values, so that
    /// `--merge` merges them field by field, as Firestore does.
    static func fields(_ text: String, json: Bool) throws -> [String: FieldValue] {
        do {
            return try JSONWriteField.fields(json: text).mapValues(fieldValue)
        } catch {
            let detail = error.message.hasPrefix("invalid JSON: ") ? String(error.message.dropFirst("invalid JSON: ".count)) : error.message
            let location = error.location.map { " (\($0))" } ?? ""
            throw CommandFailure(exitCode: CommandFailure.usage, code: "invalidArgument",
                                 message: "the document data is not valid JSON: \(detail)\(location)", json: json)
        }
    }

    private static func fieldValue(_ field: JSONWriteField) -> FieldValue {
        switch field {
        case .value(let value): .value(value)
        case .map(let fields): .map(fields.mapValues(fieldValue))
        case .increment(let n): .incrementSentinel(n)
        case .serverTimestamp: .serverTimestamp()
        case .arrayUnion(let elements): .arrayUnion(elements)
        case .arrayRemove(let elements): .arrayRemove(elements)
        case .delete: .delete()
        }
    }
}
