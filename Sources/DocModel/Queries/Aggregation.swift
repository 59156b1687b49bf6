/// One aggregation over a query's results: `count()`, `sum(field)` or `average(field)`, each
/// under an alias that names it in the result.
///
/// Semantics, as Firestore's aggregation queries:
/// - `count`: the number of documents.
/// - `sum(field)`: the sum of the field over the documents where it is a number (integer or
///   double; other types and missing fields are skipped). An integer while every value summed
///   is an integer and the sum fits `Int64`, else a double. `0` (integer) when nothing is
///   summed.
/// - `average(field)`: the mean, as a double, of the field over the documents where it is a
///   number; `null` when there are none.
public struct AggregateField: Sendable, Hashable, CustomStringConvertible {
    /// What is computed.
    public enum Operation: String, Sendable, Hashable {
        /// `count()` of the documents, `sum(field)` or `average(field)` of a numeric field (see
        /// ``AggregateField`` for the exact semantics).
        case count, sum, average
    }

    /// What is computed: a count, a sum or an average.
    public let operation: Operation
    /// The field summed or averaged; `nil` for `count`.
    public let field: FieldPath?
    /// The name of the result (`count`, `sum_amount`, `average_amount` unless given).
    public let alias: String

    /// The longest alias, in UTF-8 bytes.
    public static let maxAliasBytes = 1_500
    /// The most aggregations in one request (as Firestore).
    public static let maxPerRequest = 5

    /// The number of documents.
    public static func count(alias: String = "count") throws(DocError) -> AggregateField {
        try AggregateField(.count, field: nil, alias: alias)
    }

    /// The sum of a numeric field (a dotted field path).
    public static func sum(_ field: String, alias: String? = nil) throws(DocError) -> AggregateField {
        let path = try FieldPath(field)
        return try AggregateField(.sum, field: path, alias: alias ?? "sum_\(path)")
    }

    /// The mean of a numeric field (a dotted field path).
    public static func average(_ field: String, alias: String? = nil) throws(DocError) -> AggregateField {
        let path = try FieldPath(field)
        return try AggregateField(.average, field: path, alias: alias ?? "average_\(path)")
    }

    /// An aggregation as given, checked: `count` has no field, `sum`/`average` have one, the
    /// alias is 1…``maxAliasBytes`` bytes.
    ///
    /// - Throws: `invalidArgument` naming the problem.
    public init(_ operation: Operation, field: FieldPath?, alias: String) throws(DocError) {
        switch (operation, field) {
        case (.count, nil), (.sum, _?), (.average, _?): break
        case (.count, _?): throw DocError(.invalidArgument, "count() takes no field", at: "aggregation \(alias)")
        case (_, nil): throw DocError(.invalidArgument, "\(operation.rawValue)() needs a field", at: "aggregation \(alias)")
        }
        guard !alias.isEmpty, alias.utf8.count <= Self.maxAliasBytes else {
            throw DocError(.invalidArgument, "an aggregation alias must be 1…\(Self.maxAliasBytes) bytes", at: "aggregation \(operation.rawValue)")
        }
        self.operation = operation
        self.field = field
        self.alias = alias
    }

    public var description: String {
        "\(alias) = \(operation.rawValue)(\(field.map { "\($0)" } ?? ""))"
    }

    /// Checks a request's aggregations: 1…``maxPerRequest`` of them, aliases unique.
    ///
    /// - Throws: `invalidArgument` naming the problem.
    public static func validate(_ fields: [AggregateField]) throws(DocError) {
        guard !fields.isEmpty else { throw DocError(.invalidArgument, "an aggregation query needs at least one aggregation") }
        guard fields.count <= maxPerRequest else {
            throw DocError(.invalidArgument, "an aggregation query may have at most \(maxPerRequest) aggregations, this one has \(fields.count)")
        }
        var seen = Set<String>()
        for field in fields where !seen.insert(field.alias).inserted {
            throw DocError(.invalidArgument, "the alias \(field.alias) is used twice", at: "aggregation \(field.alias)")
        }
    }
}

/// Computes aggregations over documents (the server over its store, the client over its cache).
public struct AggregateAccumulator: Sendable {
    private let fields: [AggregateField]
    private var count = 0
    /// Per aggregation: the integer sum while exact, the double sum, how many numbers.
    private var integerSums: [Int64?]
    private var doubleSums: [Double]
    private var numbers: [Int]

    /// Starts an accumulator for `fields` (not validated; see ``AggregateField/validate(_:)``).
    public init(_ fields: [AggregateField]) {
        self.fields = fields
        integerSums = Array(repeating: 0, count: fields.count)
        doubleSums = Array(repeating: 0, count: fields.count)
        numbers = Array(repeating: 0, count: fields.count)
    }

    /// Adds one document of the results.
    public mutating func add(_ data: ObjectValue) {
        count += 1
        for (i, field) in fields.enumerated() {
            guard let path = field.field else { continue }
            switch data[path] {
            case .integer(let n)?:
                numbers[i] += 1
                doubleSums[i] += Double(n)
                if let sum = integerSums[i] {
                    let (added, overflow) = sum.addingReportingOverflow(n)
                    integerSums[i] = overflow ? nil : added
                }
            case .double(let d)?:
                numbers[i] += 1
                doubleSums[i] += d
                integerSums[i] = nil
            default:
                continue
            }
        }
    }

    /// The results by alias.
    public var result: [String: Value] {
        var out: [String: Value] = [:]
        for (i, field) in fields.enumerated() {
            switch field.operation {
            case .count:
                out[field.alias] = .integer(Int64(count))
            case .sum:
                out[field.alias] = integerSums[i].map(Value.integer) ?? .double(doubleSums[i])
            case .average:
                out[field.alias] = numbers[i] == 0 ? .null : .double(doubleSums[i] / Double(numbers[i]))
            }
        }
        return out
    }
}
