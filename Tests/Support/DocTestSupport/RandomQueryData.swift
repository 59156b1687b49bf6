public import DocModel

/// Seeded random documents and queries for the planner's property test: few distinct values
/// per field (so that equalities and ties happen), every value type, missing fields, nested
/// maps, arrays, tombstones, and values too large to index.
public struct RandomQueryData {
    public var rng: SplitMix64

    public init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    public static let collections = ["items", "other/p1/items", "other/p2/items"]
    /// The fields queries filter and sort on (`m.x` is nested).
    public static let fields = ["a", "b", "m.x", "tags", "c"]

    public mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }
    public mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &rng)] }

    /// A value too large for the index; two variants, so that large values can be equal.
    public mutating func largeString() -> Value {
        .string(String(repeating: pick(["x", "y"]), count: 1_600) + pick(["1", "2"]))
    }

    /// A scalar (or, at depth 0, maybe an array or a map) from a small domain.
    public mutating func value(depth: Int = 0) -> Value {
        switch Int.random(in: 0..<18, using: &rng) {
        case 0: return .null
        case 1: return .boolean(chance(50))
        case 2, 3, 4: return .integer(Int64.random(in: -1...4, using: &rng))
        case 5: return .double(pick([0.5, 1.0, -0.0, 2.5, .nan, -.infinity]))
        case 6, 7: return .string(pick(["", "a", "ab", "b", "c"]))
        case 8: return .timestamp(try! Timestamp(seconds: Int64.random(in: 0...2, using: &rng)))
        case 9: return .bytes(pick([[], [0], [0, 255], [1]]))
        case 10: return .reference(try! DocumentKey(pick(["items/d1", "items/d2", "x/y"])))
        case 11: return .geoPoint(try! GeoPoint(latitude: pick([0, 1]), longitude: pick([0, -1])))
        case 12 where depth == 0: return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in value(depth: 1) })
        case 13 where depth == 0: return .map(["x": value(depth: 1), "y": value(depth: 1)])
        case 14: return chance(30) ? largeString() : .integer(1)
        case 15: return .attachment(AttachmentID(digest: [UInt8](repeating: pick([0, 1, 255]), count: 32)))
        default: return .integer(Int64.random(in: 0...3, using: &rng))
        }
    }

    /// An array of small values, sometimes holding one too large to index.
    public mutating func array() -> Value {
        var elements = (0..<Int.random(in: 0...3, using: &rng)).map { _ in value(depth: 1) }
        if chance(10) { elements.append(largeString()) }
        return .array(elements)
    }

    /// A document's data: each field present or not, `m` a map whose `x` may be large, `tags`
    /// usually an array, `deletedAt` making some documents tombstones.
    public mutating func data() -> ObjectValue {
        var fields: [String: Value] = [:]
        if chance(80) { fields["a"] = value() }
        if chance(80) { fields["b"] = value() }
        if chance(40) { fields["c"] = value() }
        if chance(70) { fields["m"] = .map(["x": chance(10) ? largeString() : value(depth: 1), "y": value(depth: 1)]) }
        if chance(60) { fields["tags"] = chance(85) ? array() : value() }
        if chance(15) { fields["deletedAt"] = chance(80) ? .timestamp(try! Timestamp(seconds: 5)) : .null }
        return ObjectValue(fields)
    }

    public mutating func key() -> DocumentKey {
        let collection = chance(70) ? Self.collections[0] : pick(Self.collections)
        return try! DocumentKey("\(collection)/d\(Int.random(in: 0..<60, using: &rng))")
    }

    // MARK: Queries

    public mutating func filterValue(for op: FieldFilter.Operator) -> Value {
        op.takesValueList ? .array((0..<Int.random(in: 1...3, using: &rng)).map { _ in value(depth: 1) }) : value()
    }

    public mutating func fieldFilter() -> Filter {
        let op = pick(FieldFilter.Operator.allCases)
        if chance(10) {
            let keys: [Value] = (0..<Int.random(in: 1...3, using: &rng)).map { _ in .reference(key()) }
            return .where(.documentID, pick([.equal, .in, .greaterThan, .lessThanOrEqual]), op == .in ? .array(keys) : keys[0])
        }
        let field = try! FieldPath(pick(Self.fields))
        return .where(field, op, filterValue(for: op))
    }

    /// A random query over `documents`' collections; builder steps the rules refuse are skipped.
    public mutating func query(cursorsFrom documents: [Document]) -> Query {
        var query: Query
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: query = try! Query(collectionGroup: "items", parent: chance(50) ? .root : try! ResourcePath("other/p1"))
        case 1: query = Query(document: key())
        default: query = try! Query(collection: "items")
        }
        if query.isDocumentQuery {
            return chance(30) ? query.includingDeleted() : query
        }
        for _ in 0..<Int.random(in: 0...3, using: &rng) {
            let filter: Filter
            switch Int.random(in: 0..<10, using: &rng) {
            case 0: filter = .or([fieldFilter(), fieldFilter()])
            case 1: filter = .and([fieldFilter(), .or([fieldFilter(), fieldFilter()])])
            default: filter = fieldFilter()
            }
            query = (try? query.filter(filter)) ?? query
        }
        for _ in 0..<Int.random(in: 0...2, using: &rng) {
            let field = pick(["a", "b", "m.x", "__name__", "c"])
            query = (try? query.order(by: try! FieldPath(field), descending: chance(50))) ?? query
        }
        if chance(75) {
            let n = Int.random(in: 1...8, using: &rng)
            query = (chance(30) ? try? query.limit(toLast: n) : try? query.limit(to: n)) ?? query
        }
        if chance(35) { query = cursor(on: query, documents: documents, start: true) }
        if chance(20) { query = cursor(on: query, documents: documents, start: false) }
        if chance(25) { query = query.includingDeleted() }
        return query
    }

    /// A start or end cursor from a document, or from values for the leading sort keys.
    public mutating func cursor(on query: Query, documents: [Document], start: Bool) -> Query {
        let inclusive = chance(50)
        if chance(50), !documents.isEmpty {
            let document = pick(documents)
            switch (start, inclusive) {
            case (true, true): return (try? query.start(atDocument: document)) ?? query
            case (true, false): return (try? query.start(afterDocument: document)) ?? query
            case (false, true): return (try? query.end(atDocument: document)) ?? query
            case (false, false): return (try? query.end(beforeDocument: document)) ?? query
            }
        }
        let count = Int.random(in: 1...max(1, query.explicitOrderBys.count), using: &rng)
        let values: [Value] = query.explicitOrderBys.prefix(count).map { orderBy in
            orderBy.field.isDocumentID ? .reference(key()) : value()
        }
        switch (start, inclusive) {
        case (true, true): return (try? query.start(at: values)) ?? query
        case (true, false): return (try? query.start(after: values)) ?? query
        case (false, true): return (try? query.end(at: values)) ?? query
        case (false, false): return (try? query.end(before: values)) ?? query
        }
    }
}

extension RandomQueryData {
    /// One random batch over the documents of `model`: one to four writes of random keys —
    /// replacements (keeping the existing document's create time) and creates, and for a key
    /// that exists a hard delete `deletePercent` times in a hundred — each key once, stamped
    /// with `version`. A `nil` document is a delete.
    public mutating func batch(
        over model: [DocumentKey: Document], version: SnapshotVersion, deletePercent: Int = 20
    ) -> [DocumentKey: Document?] {
        var writes: [DocumentKey: Document?] = [:]
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let key = key()
            let existing = model[key]
            if existing != nil, chance(deletePercent) {
                writes.updateValue(nil, forKey: key)
            } else {
                writes.updateValue(Document(key: key, data: data(), version: version, createTime: existing?.createTime), forKey: key)
            }
        }
        return writes
    }
}

extension RandomQueryData {
    /// Composite indexes over the data's fields (`items`), for the tests of declared indexes.
    public static let compositeIndexes: [CompositeIndex] = [
        try! CompositeIndex(collectionGroup: "items", fields: [.init("a"), .init("b")]),
        try! CompositeIndex(collectionGroup: "items", fields: [.init("a"), .init("b", .descending)]),
        try! CompositeIndex(collectionGroup: "items", fields: [.init("c"), .init("a", .descending), .init("b")]),
        try! CompositeIndex(collectionGroup: "items", fields: [.init("b", .descending), .init("m.x")]),
        try! CompositeIndex(collectionGroup: "items", fields: [.init("a", .descending), .init("c")]),
    ]

    /// A query one of ``compositeIndexes`` may serve: equality filters on some of its leading
    /// fields (values taken from `documents`, so that they match), order-bys on the rest in the
    /// index's directions, all reversed, or mixed (which no index serves); sometimes another
    /// filter, a limit, cursors.
    public mutating func compositeIndexQuery(documents: [Document]) -> Query {
        let index = pick(Self.compositeIndexes)
        var query = try! Query(collection: chance(80) ? "items" : "other/p1/items")
        let leadingCount = Int.random(in: 0..<index.fields.count, using: &rng)
        for field in index.fields.prefix(leadingCount) {
            let value = documents.isEmpty || chance(10) ? value() : (pick(documents).value(at: field.path) ?? value())
            query = (try? query.filter(field.path, .equal, value)) ?? query
        }
        let reversed = chance(50), mixed = chance(10)
        for field in index.fields.dropFirst(leadingCount) {
            let flip = mixed ? chance(50) : reversed
            query = (try? query.order(by: field.path, descending: (field.direction == .descending) != flip)) ?? query
        }
        if chance(30) { query = (try? query.filter(fieldFilter())) ?? query }
        // A range of the first order-by (the field after the leading ones), which narrows the
        // walk: sometimes one end, sometimes both.
        if let next = index.fields.dropFirst(leadingCount).first, chance(30) {
            for _ in 0..<(chance(30) ? 2 : 1) {
                let value = documents.isEmpty || chance(20) ? value() : (pick(documents).value(at: next.path) ?? value())
                let op = pick([FieldFilter.Operator.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual])
                query = (try? query.filter(next.path, op, value)) ?? query
            }
        }
        if chance(80) {
            let n = Int.random(in: 1...8, using: &rng)
            query = (chance(30) ? try? query.limit(toLast: n) : try? query.limit(to: n)) ?? query
        }
        if chance(30) { query = cursor(on: query, documents: documents, start: true) }
        if chance(15) { query = cursor(on: query, documents: documents, start: false) }
        if chance(15) { query = query.includingDeleted() }
        return query
    }
}

/// The reference every query plan must agree with: the full scan's answer (`Target.matches`,
/// `Target.compare`, the first `limit`).
public func fullScan(_ documents: some Sequence<Document>, _ target: Target, limit: Int?) -> [Document] {
    let sorted = documents.filter(target.matches).sorted { target.compare($0, $1) < 0 }
    guard let limit else { return sorted }
    return Array(sorted.prefix(max(limit, 0)))
}

extension Target {
    /// The target without its limit: the documents it matches, all of them (a
    /// `limit(toLast:)` target matches the same documents as its query).
    public var withoutLimit: Target {
        Target(path: path, collectionGroup: collectionGroup, filters: filters, orderBys: orderBys,
               limit: nil, startAt: startAt, endAt: endAt, includeDeleted: includeDeleted)
    }
}
