internal import DocModel

/// What a collection target's filters and cursors say about the index ranges that can hold
/// its results. Everything here only narrows where to look: plans still check every
/// candidate with `Target.matches`, so a bound may be looser than the filters, never tighter.
struct TargetConstraints {
    let target: Target
    /// The field filters every result satisfies: top-level filters and members of `and`
    /// composites at any depth (not members of `or`s, which other documents may satisfy).
    let conjunction: [FieldFilter]

    init(_ target: Target) {
        self.target = target
        conjunction = Self.conjunction(of: target.filters)
    }

    static func conjunction(of filters: [Filter]) -> [FieldFilter] {
        filters.flatMap { filter -> [FieldFilter] in
            switch filter {
            case .field(let f): return [f]
            case .composite(let c): return c.op == .and ? conjunction(of: c.filters) : []
            }
        }
    }

    /// The collection queried.
    var collection: ResourcePath { target.path }

    /// The first sort key: the order of an index walk.
    var firstOrderBy: OrderBy? { target.orderBys.first }

    // MARK: Value ranges

    /// The range of ``field``'s value index that holds every result: bounded by the filters on
    /// the field and, when it is the first sort key, by the cursors.
    func valueRange(of field: FieldPath) -> IndexRange {
        var range = IndexRange(collection: collection, field: field, kind: .value)
        for filter in conjunction where filter.field == field {
            Self.narrow(&range, by: filter)
        }
        if let first = firstOrderBy, first.field == field {
            narrow(&range, byCursorsOn: first)
        }
        return range
    }

    /// Narrows `range` (a value index) to the values `filter` can match. Comparisons only
    /// match values of the filter value's type, which all share its first encoded byte (the
    /// type tag): `a > 5` is the numbers above 5.
    static func narrow(_ range: inout IndexRange, by filter: FieldFilter) {
        let value = filter.value
        switch filter.op {
        case .equal:
            range.restrict(lower: IndexValueBound(value, inclusive: true))
            range.restrict(upper: IndexValueBound(value, inclusive: true))
        case .lessThan, .lessThanOrEqual:
            range.restrict(lower: typeStart(of: value))
            range.restrict(upper: IndexValueBound(value, inclusive: filter.op == .lessThanOrEqual))
        case .greaterThan, .greaterThanOrEqual:
            range.restrict(lower: IndexValueBound(value, inclusive: filter.op == .greaterThanOrEqual))
            range.restrict(upper: typeEnd(of: value))
        case .in:
            guard case .array(let values) = value, !values.isEmpty else { return }
            let encoded = values.map { $0.indexEncoded() }
            range.restrict(lower: IndexValueBound(encoded: encoded.min(by: Self.precedes)!, inclusive: true))
            range.restrict(upper: IndexValueBound(encoded: encoded.max(by: Self.precedes)!, inclusive: true))
        case .notEqual, .notIn:
            // Never null.
            range.restrict(lower: IndexValueBound(.null, inclusive: false))
        case .arrayContains, .arrayContainsAny:
            // Only arrays contain anything.
            range.restrict(lower: typeStart(of: .array([])))
            range.restrict(upper: typeEnd(of: .array([])))
        }
    }

    /// Narrows `range` to the values of `orderBy`'s field between the cursors. Only the
    /// cursors' first values count (later sort keys break ties), so the ends are inclusive
    /// unless the cursor has that one value and excludes it.
    func narrow(_ range: inout IndexRange, byCursorsOn orderBy: OrderBy) {
        if let start = target.startAt, let value = start.position.first {
            let bound = IndexValueBound(value, inclusive: start.inclusive || start.position.count > 1)
            if orderBy.isDescending { range.restrict(upper: bound) } else { range.restrict(lower: bound) }
        }
        if let end = target.endAt, let value = end.position.first {
            let bound = IndexValueBound(value, inclusive: end.inclusive || end.position.count > 1)
            if orderBy.isDescending { range.restrict(lower: bound) } else { range.restrict(upper: bound) }
        }
    }

    /// The lowest encoding of `value`'s type: its tag byte alone (every encoding of the type
    /// starts with it).
    static func typeStart(of value: Value) -> IndexValueBound {
        IndexValueBound(encoded: [value.indexEncoded()[0]], inclusive: true)
    }

    /// Just above every encoding of `value`'s type: the next tag byte, excluded.
    static func typeEnd(of value: Value) -> IndexValueBound {
        IndexValueBound(encoded: [value.indexEncoded()[0] + 1], inclusive: false)
    }

    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool { OrderedCode.compare(a, b) < 0 }

    // MARK: Point lookups

    /// The ranges of exact values that hold every result, from one `==`, `in`,
    /// `array-contains` or `array-contains-any` filter on `field` (the first such filter), or
    /// `nil` when there is none. Values with equal encodings (`1` and `1.0`) share a range.
    func pointRanges(of field: FieldPath) -> [IndexRange]? {
        guard let filter = conjunction.first(where: { $0.field == field && Self.isPointFilter($0) }) else { return nil }
        let kind: IndexKind = filter.op.isArrayOperator ? .arrayElement : .value
        let values: [Value]
        switch filter.op {
        case .equal, .arrayContains:
            values = [filter.value]
        default:
            guard case .array(let list) = filter.value else { return [] }
            values = list
        }
        var seen = Set<[UInt8]>()
        return values.filter { seen.insert($0.indexEncoded()).inserted }.map { value in
            IndexRange(collection: collection, field: field, kind: kind, equalTo: value)
        }
    }

    /// The index entries every result has, for an index walk over another field than these:
    /// one per `==` / `array-contains` filter whose value is small enough to be indexed (a
    /// document's value equal to it, or an element equal to it, then has exactly that entry),
    /// other than on `walked` and `__name__`.
    func probes(except walked: FieldPath) -> [IndexProbe] {
        var probes: [IndexProbe] = []
        for filter in conjunction where filter.field != walked && !filter.field.isDocumentID {
            let kind: IndexKind
            switch filter.op {
            case .equal: kind = .value
            case .arrayContains: kind = .arrayElement
            default: continue
            }
            let encoded = filter.value.indexEncoded()
            guard encoded.count <= DocumentIndexEntries.maxEncodedValueBytes else { continue }
            let probe = IndexProbe(field: filter.field, kind: kind, value: encoded)
            if !probes.contains(probe) { probes.append(probe) }
        }
        return probes
    }

    /// Whether `filter` selects documents by exact values (a point lookup in an index).
    static func isPointFilter(_ filter: FieldFilter) -> Bool {
        switch filter.op {
        case .equal, .in, .arrayContains, .arrayContainsAny: return !filter.field.isDocumentID
        default: return false
        }
    }

    /// The fields with a filter that bounds their value range (comparisons, `!=`, `not-in`),
    /// other than `__name__`, each once, in filter order.
    var rangeFilterFields: [FieldPath] {
        var fields: [FieldPath] = []
        for filter in conjunction where filter.op.isInequality && !filter.field.isDocumentID {
            if !fields.contains(filter.field) { fields.append(filter.field) }
        }
        return fields
    }

    /// The fields of point filters other than `__name__`, each once, in filter order.
    var pointFilterFields: [FieldPath] {
        var fields: [FieldPath] = []
        for filter in conjunction where Self.isPointFilter(filter) {
            if !fields.contains(filter.field) { fields.append(filter.field) }
        }
        return fields
    }

    /// The documents a `__name__ ==` or `__name__ in` filter allows (only references can be
    /// equal to a key), or `nil` when there is no such filter.
    var keyLookups: [DocumentKey]? {
        guard let filter = conjunction.first(where: { $0.field.isDocumentID && ($0.op == .equal || $0.op == .in) }) else {
            return nil
        }
        let values: [Value]
        if filter.op == .equal {
            values = [filter.value]
        } else if case .array(let list) = filter.value {
            values = list
        } else {
            values = []
        }
        var keys: [DocumentKey] = []
        for case .reference(let key) in values where !keys.contains(key) { keys.append(key) }
        return keys
    }

    // MARK: Cursor seeds

    /// Where a walk of the collection in key order can start, from a start cursor on a first
    /// sort key `__name__`: strictly after the cursor's document, which itself is read as well
    /// when the cursor may include it. `nil` when the cursor names no document of the
    /// collection.
    var keyWalkSeed: (after: DocumentKey, includes: DocumentKey?)? {
        guard let start = target.startAt, case .reference(let key)? = start.position.first,
              key.isIn(collection: collection) else { return nil }
        return (key, start.inclusive || start.position.count > 1 ? key : nil)
    }

    /// Where a walk of the first sort key's index can start, from a start cursor on exactly
    /// (first key, `__name__`) in one direction: strictly after the entry (value, document),
    /// the document itself read as well when the cursor may include it.
    var indexWalkSeed: (after: IndexPosition, includes: DocumentKey?)? {
        let orderBys = target.orderBys
        guard orderBys.count >= 2, orderBys[1].field.isDocumentID, orderBys[1].direction == orderBys[0].direction,
              let start = target.startAt, start.position.count >= 2,
              case .reference(let key) = start.position[1], key.isIn(collection: collection)
        else { return nil }
        let position = IndexPosition(value: start.position[0].indexEncoded(), key: key)
        return (position, start.inclusive || start.position.count > 2 ? key : nil)
    }
}
