@testable import DocModel

/// Random documents and queries over a small vocabulary, so that fields, values and keys
/// collide often.
struct QueryRandom {
    var rng: SplitMix64

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    static let fields = ["a", "b", "c"]

    /// Values of mixed types, with numeric ties across integer and double, NaN and null.
    static let values: [Value] = [
        .null, false, true, .double(.nan), -1.5, 0, 1, 1.0, 2, 2.5, "", "a", "b", "ab",
        .bytes([1]), .timestamp(try! Timestamp(seconds: 7)), .reference(try! DocumentKey("c/d1")),
        [], [1], [1, "a"], [2.0], ["x": 1], ["x": 1.0],
    ]

    mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func chance(_ percent: Int) -> Bool { int(0..<100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0..<items.count)] }

    mutating func value() -> Value { pick(Self.values) }

    /// `count` documents with distinct keys: mostly in `c`, some elsewhere, some tombstones;
    /// each of `a`, `b`, `c` present with probability 3/4.
    mutating func documents(_ count: Int) -> [Document] {
        (0..<count).map { i in
            var fields: [String: Value] = [:]
            for f in Self.fields where chance(75) { fields[f] = value() }
            if chance(10) { fields[tombstoneField] = .timestamp(try! Timestamp(seconds: 1)) }
            let path: String
            switch int(0..<10) {
            case 0: path = "other/d\(i)"
            case 1: path = "c/d\(i)/sub/s\(i)"
            default: path = "c/d\(i)"
            }
            return Document(key: try! DocumentKey(path), data: ObjectValue(fields), version: SnapshotVersion(microseconds: 1))
        }
    }

    mutating func fieldFilter() -> Filter {
        let op = pick(FieldFilter.Operator.allCases)
        if chance(10) {
            // A key filter: a document id or a reference.
            let id: Value = chance(50) ? .string("d\(int(0..<30))") : .reference(try! DocumentKey("c/d\(int(0..<30))"))
            let keyOp = pick([FieldFilter.Operator.lessThan, .greaterThanOrEqual, .equal, .notEqual, .in])
            return .where(.documentID, keyOp, keyOp == .in ? [id] : id)
        }
        let field = FieldPath(unchecked: [pick(Self.fields)])
        let value: Value = op.takesValueList ? .array((0..<int(1..<4)).map { _ in self.value() }) : value()
        return .where(field, op, value)
    }

    mutating func filter() -> Filter {
        guard chance(25) else { return fieldFilter() }
        let members = (0..<int(2..<4)).map { _ in fieldFilter() }
        return chance(50) ? .or(members) : .and(members)
    }

    /// A random valid query on `c` (1–2 filters, 0–2 order-bys, maybe a limit, maybe tombstones),
    /// and the filters it was built from. Invalid combinations are retried.
    mutating func query() -> (Query, [Filter]) {
        while true {
            var q = try! Query(collection: "c")
            var used: [Filter] = []
            do {
                for _ in 0..<int(1..<3) {
                    let f = filter()
                    q = try q.filter(f)
                    used.append(f)
                }
                var ordered: [String] = []
                for _ in 0..<int(0..<3) {
                    let f = pick(Self.fields + ["__name__"])
                    if ordered.contains(f) { continue }
                    ordered.append(f)
                    q = try q.order(by: f, descending: chance(50))
                }
                if chance(40) {
                    let n = int(1..<6)
                    q = try (chance(50) || q.explicitOrderBys.isEmpty) ? q.limit(to: n) : q.limit(toLast: n)
                }
                if chance(20) { q = q.includingDeleted() }
                return (q, used)
            } catch {
                continue
            }
        }
    }
}
