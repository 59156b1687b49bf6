@testable import DocModel

/// Random documents and mutations for the property tests.
///
/// Data fields are named `a`…`d`; transforms target `e` and `f.g`, so they never collide with
/// the data a mutation writes, while base documents (named `a`…`f`) give them previous values.
struct MutationRandom {
    var rng: SplitMix64

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    static let dataNames = ["a", "b", "c", "d"]
    static let transformPaths = [Fx.path("e"), Fx.path("f.g")]

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }

    mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &rng)] }

    /// A small scalar, with integers and doubles that are equal but not identical.
    mutating func scalar() -> Value {
        pick([
            .null, true, false, 0, 1, 2, -1, .integer(.max), .double(1.0), .double(0.5), .double(-0.0), .double(2.0),
            "x", "y", "", .bytes([1, 2]), .timestamp(Fx.v1.timestamp),
        ])
    }

    /// A random value; arrays hold scalars and maps, never arrays.
    mutating func value(depth: Int = 0) -> Value {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0..<5:
            return scalar()
        case 5..<7 where depth < 2:
            return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in chance(80) ? scalar() : map(depth: depth + 1) })
        case 7..<10 where depth < 2:
            return map(depth: depth + 1)
        default:
            return scalar()
        }
    }

    mutating func map(depth: Int, names: [String] = ["a", "b", "c"]) -> Value {
        var m: [String: Value] = [:]
        for name in names where chance(50) { m[name] = value(depth: depth) }
        return .map(m)
    }

    mutating func data(names: [String] = dataNames) -> ObjectValue {
        var fields: [String: Value] = [:]
        for name in names where chance(60) { fields[name] = value() }
        return ObjectValue(fields)
    }

    /// A base state: missing, deleted, unknown (only when `allowUnknown`), or a document.
    mutating func base(allowUnknown: Bool) -> MaybeDocument? {
        switch Int.random(in: 0..<(allowUnknown ? 8 : 7), using: &rng) {
        case 0: return nil
        case 1: return .noDocument(NoDocument(key: Fx.key, version: Fx.v1))
        case 7: return .unknown(UnknownDocument(key: Fx.key, version: Fx.v1))
        default:
            var fields = data(names: Self.dataNames + ["e", "f"]).fields
            if chance(30) { fields["f"] = ["g": pick([1, .double(2.5), [1, "x"], "s"])] }
            if chance(30) { fields["e"] = pick([1, [1, .double(1.0), "x"], [], "text"]) }
            return .document(Document(key: Fx.key, data: ObjectValue(fields), version: Fx.v1, createTime: Fx.created))
        }
    }

    /// Up to two transforms on the transform paths; increments only when `increments`.
    mutating func transforms(increments: Bool) -> [FieldTransform] {
        var out: [FieldTransform] = []
        for path in Self.transformPaths where chance(40) {
            let kinds = increments ? 4 : 3
            switch Int.random(in: 0..<kinds, using: &rng) {
            case 0: out.append(.arrayUnion(path, (0..<Int.random(in: 0...3, using: &rng)).map { _ in scalar() }))
            case 1: out.append(.arrayRemove(path, (0..<Int.random(in: 0...2, using: &rng)).map { _ in scalar() }))
            case 2: out.append(.serverTimestamp(path))
            default: out.append(.increment(path, by: pick([1, -3, .double(0.5), .integer(.max)])))
            }
        }
        return out
    }

    /// A random valid mutation of ``Fx/key``. When `idempotent`, applying it twice (at the same
    /// commit version) equals applying it once: no increments, and deletes without an
    /// `exists` precondition (a second delete would find nothing to delete).
    mutating func mutation(idempotent: Bool) -> Mutation {
        let key = Fx.key
        let increments = !idempotent
        switch Int.random(in: 0..<7, using: &rng) {
        case 0:
            return .set(key, data(), transforms: transforms(increments: increments))
        case 1:
            return .setMerge(key, data(), transforms: transforms(increments: increments))
        case 2:
            // Set-merge with explicit fields: some leaves of the data plus possibly an absent field.
            let d = data()
            var fields = d.leafPaths.filter { _ in chance(70) }
            if let absent = Self.dataNames.first(where: { d[$0] == Value?.none }), chance(50) {
                fields.append(Fx.path(absent))
            }
            return .setMerge(key, d, fields: fields, transforms: transforms(increments: increments))
        case 3:
            // A patch without transforms: update some fields (possibly nested), delete others.
            var fields: [FieldPath: Value] = [:]
            var deleting: [FieldPath] = []
            for name in Self.dataNames {
                let path = chance(50) ? Fx.path(name) : Fx.path(name + "." + pick(["a", "b"]))
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: fields[path] = value()
                case 1: deleting.append(path)
                default: break
                }
            }
            var m = Mutation.update(key, fields: fields, deleting: deleting)
            if chance(40) { m.precondition = .none }
            return m
        case 4:
            return .delete(key, precondition: !idempotent && chance(30) ? .exists(true) : .none)
        case 5:
            return .tombstone(key, transforms: transforms(increments: increments))
        default:
            // Transforms only (array union/remove, server timestamps).
            var t = transforms(increments: increments)
            if t.isEmpty { t = [.arrayUnion(Self.transformPaths[0], [scalar()])] }
            return .update(key, fields: [:], transforms: t)
        }
    }
}
