import ArgumentParser
import DocCache
import DocModel
import Foundation

/// `--where`, `--order-by`, `--limit`, `--include-deleted`: a bounded query.
struct QueryOptions: ParsableArguments {
    @Option(name: .customLong("where"), help: ArgumentHelp(
        "A filter \"FIELD OP VALUE\" (repeatable); OP is one of < <= == != >= > array-contains array-contains-any in not-in; VALUE is JSON (a bare word is a string).",
        valueName: "filter"))
    var filters: [String] = []
    @Option(name: .customLong("order-by"), help: ArgumentHelp("FIELD or FIELD:desc (repeatable).", valueName: "field"))
    var orderBy: [String] = []
    @Option(help: "The most documents (required: listeners and queries are bounded).")
    var limit: Int?
    @Flag(help: "Include tombstoned (deleted) documents.")
    var includeDeleted = false

    /// The query over `collection`, refused like the library refuses it (no limit → the
    /// library's bounded-listener error).
    func query(_ collection: CollectionReference) throws(DocError) -> DocumentQuery {
        var query = collection.query
        for text in filters {
            let (field, op, value) = try Self.parseFilter(text)
            query = try query.whereField(field, op, value)
        }
        for text in orderBy {
            var field = text
            var descending = false
            for (suffix, isDescending) in [(":desc", true), (":asc", false)] where text.hasSuffix(suffix) {
                field = String(text.dropLast(suffix.count))
                descending = isDescending
            }
            query = try query.order(by: field, descending: descending)
        }
        if let limit { query = try query.limit(to: limit) }
        if includeDeleted { query = query.includeDeleted() }
        return query
    }

    /// `FIELD OP VALUE`.
    static func parseFilter(_ text: String) throws(DocError) -> (String, FieldFilter.Operator, Value) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        // The field may be backquoted and contain spaces.
        let field: String
        var rest: Substring
        if trimmed.hasPrefix("`"), let close = trimmed.dropFirst().firstIndex(of: "`") {
            field = String(trimmed[...close])
            rest = trimmed[trimmed.index(after: close)...]
        } else {
            guard let space = trimmed.firstIndex(of: " ") else {
                throw DocError(.invalidArgument, "a filter is \"FIELD OP VALUE\", e.g. \"age >= 18\"; got \"\(text)\"", at: "--where")
            }
            field = String(trimmed[..<space])
            rest = trimmed[space...]
        }
        rest = rest.drop(while: { $0 == " " })
        guard let opEnd = rest.firstIndex(of: " ") else {
            throw DocError(.invalidArgument, "a filter is \"FIELD OP VALUE\", e.g. \"age >= 18\"; got \"\(text)\"", at: "--where")
        }
        let opText = String(rest[..<opEnd])
        guard let op = FieldFilter.Operator(rawValue: opText) else {
            throw DocError(.invalidArgument, "unknown operator \"\(opText)\"; use one of \(FieldFilter.Operator.allCases.map(\.rawValue).joined(separator: " "))", at: "--where")
        }
        let valueText = rest[opEnd...].trimmingCharacters(in: .whitespaces)
        guard !valueText.isEmpty else { throw DocError(.invalidArgument, "the filter \"\(text)\" has no value", at: "--where") }
        if let value = try? Value(json: valueText) { return (field, op, value) }
        let bareWord = valueText.allSatisfy { !"\"[]{},:".contains($0) }
        guard bareWord else { throw DocError(.invalidArgument, "the value \(valueText) is not valid JSON", at: "--where") }
        return (field, op, .string(valueText))
    }
}
