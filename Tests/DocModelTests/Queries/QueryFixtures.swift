@testable import DocModel

/// Shared helpers for the query tests (namespaced to stay clear of other test files).
enum QueryFixtures {
    /// A document at `path` with `fields`.
    static func doc(_ path: String, _ fields: [String: Value] = [:]) -> Document {
        Document(key: try! DocumentKey(path), data: ObjectValue(fields), version: SnapshotVersion(microseconds: 1))
    }

    /// A tombstone at `path`: `fields` plus a non-null `deletedAt`.
    static func tombstone(_ path: String, _ fields: [String: Value] = [:]) -> Document {
        var f = fields
        f[tombstoneField] = .timestamp(try! Timestamp(seconds: 100))
        return doc(path, f)
    }

    static func key(_ path: String) -> DocumentKey { try! DocumentKey(path) }
    static func ref(_ path: String) -> Value { .reference(key(path)) }
    static func field(_ text: String) -> FieldPath { try! FieldPath(text) }
    static func ts(_ seconds: Int64) -> Value { .timestamp(try! Timestamp(seconds: seconds)) }
    static func coll(_ path: String) -> Query { try! Query(collection: path) }

    /// The keys of `documents`, as strings.
    static func keys(_ documents: [Document]) -> [String] { documents.map(\.key.description) }

    /// Runs `body` and returns the error it throws as a `DocError` (any other error becomes an
    /// `unknown` one naming it), or `nil` when it does not throw.
    static func error<T>(_ body: () throws -> T) -> DocError? {
        do {
            _ = try body()
            return nil
        } catch let error as DocError {
            return error
        } catch {
            return DocError(.unknown, "not a DocError: \(error)")
        }
    }
}
