/// A filter on one field of a document: `field op value`, e.g. `age >= 18`.
///
/// Matching follows Firestore's query semantics exactly:
///
/// - A document that lacks the field never matches, whatever the operator.
/// - `<`, `<=`, `==`, `>=`, `>` only match values of the same type order as the filter value
///   (integers and doubles share one), compared with ``Value/compare(_:_:)``: `a < 5` does not
///   match `a: "x"`, `== 1` matches `1.0`, `== NaN` matches NaN.
/// - `!=` matches values of any type except `null` (and except values equal to the filter value).
/// - `array-contains` matches arrays holding an element equal to the value; `array-contains-any`
///   arrays holding an element equal to one of the values; `in` fields equal to one of the values.
/// - `not-in` matches fields that are present, not `null` and equal to none of the values; a
///   `not-in` list holding `null` matches nothing.
/// - On ``FieldPath/documentID`` (`__name__`) the field's value is the document's key as a
///   ``Value/reference(_:)``, so key filters compare keys.
///
/// Equality ("the same") uses ``Value``'s semantic `==` throughout (`1 == 1.0`, `NaN == NaN`).
///
/// A `FieldFilter` is plain data; the rules on which filters a query accepts are checked when it
/// is added with `Query.filter(_:)`.
public struct FieldFilter: Sendable, Hashable, CustomStringConvertible {
    /// A comparison operator, spelled as Firestore spells it.
    public enum Operator: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// `<`: values of the same type order, less than the filter value.
        case lessThan = "<"
        /// `<=`: values of the same type order, at most the filter value.
        case lessThanOrEqual = "<="
        /// `==`: values equal to the filter value (`1 == 1.0`).
        case equal = "=="
        /// `!=`: present, non-null values not equal to the filter value, of any type.
        case notEqual = "!="
        /// `>=`: values of the same type order, at least the filter value.
        case greaterThanOrEqual = ">="
        /// `>`: values of the same type order, greater than the filter value.
        case greaterThan = ">"
        /// `array-contains`: arrays holding an element equal to the filter value.
        case arrayContains = "array-contains"
        /// `array-contains-any`: arrays holding an element equal to one of the filter's values (at
        /// most ``Query/maxDisjunctionValues``).
        case arrayContainsAny = "array-contains-any"
        /// `in`: values equal to one of the filter's values (at most
        /// ``Query/maxDisjunctionValues``).
        case `in` = "in"
        /// `not-in`: present, non-null values equal to none of the filter's values; a list holding
        /// `null` matches nothing.
        case notIn = "not-in"

        /// The Firestore name of the operator (`"<"`, `"array-contains"`, `"not-in"` …).
        public var name: String { rawValue }
        public var description: String { rawValue }

        /// Whether this is an inequality (`<`, `<=`, `>`, `>=`, `!=`, `not-in`): a filter that
        /// selects a range of the field's values and so implies an ordering by the field.
        public var isInequality: Bool {
            switch self {
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notEqual, .notIn:
                return true
            case .equal, .arrayContains, .arrayContainsAny, .in:
                return false
            }
        }

        /// Whether the operator looks inside an array field (`array-contains`, `array-contains-any`).
        public var isArrayOperator: Bool { self == .arrayContains || self == .arrayContainsAny }

        /// Whether the filter value is a list of alternatives (`in`, `not-in`, `array-contains-any`).
        public var takesValueList: Bool { self == .in || self == .notIn || self == .arrayContainsAny }

        /// Whether `comparison` (the field's value compared with the filter value, -1/0/1)
        /// satisfies this operator. Only meaningful for `<`, `<=`, `==`, `!=`, `>=`, `>`.
        func accepts(_ comparison: Int) -> Bool {
            switch self {
            case .lessThan: return comparison < 0
            case .lessThanOrEqual: return comparison <= 0
            case .equal: return comparison == 0
            case .notEqual: return comparison != 0
            case .greaterThanOrEqual: return comparison >= 0
            case .greaterThan: return comparison > 0
            case .arrayContains, .arrayContainsAny, .in, .notIn: return false
            }
        }
    }

    /// The field the filter tests; ``FieldPath/documentID`` for a key filter.
    public let field: FieldPath
    /// The comparison.
    public let op: Operator
    /// The value compared with; an array of alternatives for `in`, `not-in` and
    /// `array-contains-any`.
    public let value: Value

    /// Creates a filter. No validation happens here; `Query.filter(_:)` validates.
    public init(_ field: FieldPath, _ op: Operator, _ value: Value) {
        self.field = field
        self.op = op
        self.value = value
    }

    /// Whether this is an inequality filter (see ``Operator/isInequality``).
    public var isInequality: Bool { op.isInequality }

    /// Whether the filter is on the document key (`__name__`).
    public var isKeyFilter: Bool { field.isDocumentID }

    /// Whether `document` satisfies the filter (see the type's documentation for the rules).
    public func matches(_ document: Document) -> Bool {
        guard let lhs = document.value(at: field) else { return false }
        switch op {
        case .lessThan, .lessThanOrEqual, .equal, .greaterThanOrEqual, .greaterThan:
            // Only values of the same type order are comparable (integers and doubles share one).
            return lhs.typeOrder == value.typeOrder && op.accepts(Value.compare(lhs, value))
        case .notEqual:
            // Types need not match, but null never satisfies `!=`.
            return !lhs.isNull && Value.compare(lhs, value) != 0
        case .arrayContains:
            guard case .array(let elements) = lhs else { return false }
            return elements.contains(value)
        case .arrayContainsAny:
            guard case .array(let elements) = lhs, case .array(let candidates) = value else { return false }
            return elements.contains { candidates.contains($0) }
        case .in:
            guard case .array(let candidates) = value else { return false }
            return candidates.contains(lhs)
        case .notIn:
            guard case .array(let candidates) = value, !candidates.contains(.null) else { return false }
            return !lhs.isNull && !candidates.contains(lhs)
        }
    }

    /// A deterministic text form: `field op value`, e.g. `age >= 18`, `tags in ["a","b"]`.
    ///
    /// The value is written with ``Value/canonicalString``. For `in`, `not-in` and
    /// `array-contains-any` the list is a set, so its values are written sorted (by
    /// ``Value/compare(_:_:)``, ties by canonical string) with identical values once: `in [2,1]`
    /// and `in [1,2,2]` have the same id.
    public var canonicalID: String {
        "\(field.canonicalString) \(op.rawValue) \(canonicalValueString)"
    }

    private var canonicalValueString: String {
        guard op.takesValueList, case .array(let values) = value else { return value.canonicalString }
        let strings = values
            .map { ($0, $0.canonicalString) }
            .sorted { l, r in
                let c = Value.compare(l.0, r.0)
                return c != 0 ? c < 0 : compareUTF8(l.1, r.1) < 0
            }
            .map(\.1)
        var unique: [String] = []
        for s in strings where unique.last.map({ !equalUTF8($0, s) }) ?? true {
            unique.append(s)
        }
        return "[" + unique.joined(separator: ",") + "]"
    }

    public var description: String { canonicalID }

    /// Filters are equal when their canonical ids are: same field and operator, identical
    /// value (``Value/isIdentical(to:)``; value lists compared as sets).
    public static func == (a: FieldFilter, b: FieldFilter) -> Bool { a.canonicalID == b.canonicalID }

    public func hash(into hasher: inout Hasher) { hasher.combine(canonicalID) }
}
