internal import DocModel

// Binary encoding of targets and target data, the values of the target table (see
// KeySchema.swift). Primitives as in ByteCoding.swift.
//
//   target data   format 0x01, zigzag target id, purpose byte, zigzag sequence number,
//                 zigzag snapshot version µs, zigzag last-limbo-free version µs,
//                 bytes resume token, flag + zigzag expected count, target
//   target        path segments (any count, the root is 0), flag + string collection group,
//                 varint count + filters, varint count + order-bys, flag + zigzag limit,
//                 flag + bound start, flag + bound end, flag includeDeleted
//   filter        0 field filter: field path, operator byte, value
//                 1 composite: 0 and / 1 or, varint count + filters (nesting ≤ 64 on read)
//   operator      0 <  1 <=  2 ==  3 !=  4 >=  5 >  6 array-contains  7 array-contains-any
//                 8 in  9 not-in
//   order-by      field path, 0 ascending / 1 descending
//   bound         flag inclusive, varint count + values
//
// Filters and order-bys are stored in the order given: a decoded target is the same target,
// part by part, not only one with the same canonical id.

/// Encodes and decodes ``Target``s and ``TargetData`` for storage.
enum TargetCoding {
    /// The format byte of stored target data.
    static let format: UInt8 = 1
    /// The deepest nesting of composite filters the decoder accepts (stack protection).
    static let maxFilterDepth = 64

    private static let operators: [FieldFilter.Operator] = [
        .lessThan, .lessThanOrEqual, .equal, .notEqual, .greaterThanOrEqual, .greaterThan,
        .arrayContains, .arrayContainsAny, .in, .notIn,
    ]

    /// The stored form of target data.
    static func encode(_ data: TargetData) -> [UInt8] {
        var w = ByteWriter(format: format, capacity: 128)
        w.zigzag(Int64(data.targetID))
        w.byte(UInt8(data.purpose.rawValue))
        w.zigzag(data.sequenceNumber)
        w.zigzag(data.snapshotVersion.microseconds)
        w.zigzag(data.lastLimboFreeSnapshotVersion.microseconds)
        w.lengthPrefixed(data.resumeToken)
        w.flag(data.expectedCount != nil)
        if let n = data.expectedCount { w.zigzag(Int64(n)) }
        write(data.target, to: &w)
        return w.bytes
    }

    /// Decodes ``encode(_:)-swift.type.method`` output; `dataLoss` on corrupt input.
    static func decodeTargetData(_ bytes: [UInt8]) throws(DocError) -> TargetData {
        var r = ByteReader(bytes, record: "target data")
        let f = try r.byte()
        guard f == format else { throw r.fail("unsupported format \(f) (this build reads format \(format))", at: 0) }
        let id = try r.int32()
        let purposeAt = r.offset
        guard let purpose = QueryPurpose(rawValue: Int(try r.byte())) else {
            throw r.fail("unknown query purpose", at: purposeAt)
        }
        let sequence = try r.zigzag()
        let snapshot = SnapshotVersion(microseconds: try r.zigzag())
        let limboFree = SnapshotVersion(microseconds: try r.zigzag())
        let token = try r.lengthPrefixed()
        let expected: Int? = try r.flag() ? try r.int() : nil
        let target = try read(&r)
        try r.finish()
        return TargetData(
            target: target, targetID: id, purpose: purpose, sequenceNumber: sequence, snapshotVersion: snapshot,
            lastLimboFreeSnapshotVersion: limboFree, resumeToken: token, expectedCount: expected)
    }

    /// The stored form of a target alone (for tests and tools).
    static func encode(_ target: Target) -> [UInt8] {
        var w = ByteWriter()
        write(target, to: &w)
        return w.bytes
    }

    /// Decodes ``encode(_:)-swift.type.method`` output of a target.
    static func decodeTarget(_ bytes: [UInt8]) throws(DocError) -> Target {
        var r = ByteReader(bytes, record: "target")
        let t = try read(&r)
        try r.finish()
        return t
    }

    // MARK: Parts

    /// Appends a target.
    static func write(_ t: Target, to w: inout ByteWriter) {
        w.segments(t.path.segments)
        w.flag(t.collectionGroup != nil)
        if let g = t.collectionGroup { w.string(g) }
        w.varint(UInt64(t.filters.count))
        for f in t.filters { write(f, to: &w) }
        w.varint(UInt64(t.orderBys.count))
        for o in t.orderBys {
            w.fieldPath(o.field)
            w.byte(o.isDescending ? 1 : 0)
        }
        w.flag(t.limit != nil)
        if let l = t.limit { w.zigzag(Int64(l)) }
        w.flag(t.startAt != nil)
        if let b = t.startAt { write(b, to: &w) }
        w.flag(t.endAt != nil)
        if let b = t.endAt { write(b, to: &w) }
        w.flag(t.includeDeleted)
    }

    /// Reads a target.
    static func read(_ r: inout ByteReader) throws(DocError) -> Target {
        let path = ResourcePath(unchecked: try r.segments())
        let group: String? = try r.flag() ? try r.string() : nil
        let filterCount = try r.count("filter count")
        var filters: [Filter] = []
        filters.reserveCapacity(filterCount)
        for _ in 0..<filterCount { filters.append(try readFilter(&r, depth: 0)) }
        let orderCount = try r.count("order-by count")
        var orderBys: [OrderBy] = []
        orderBys.reserveCapacity(orderCount)
        for _ in 0..<orderCount {
            let field = try r.fieldPath()
            let at = r.offset
            switch try r.byte() {
            case 0: orderBys.append(OrderBy(field, .ascending))
            case 1: orderBys.append(OrderBy(field, .descending))
            default: throw r.fail("unknown sort direction", at: at)
            }
        }
        let limit: Int? = try r.flag() ? try r.int() : nil
        let start: Bound? = try r.flag() ? try readBound(&r) : nil
        let end: Bound? = try r.flag() ? try readBound(&r) : nil
        let includeDeleted = try r.flag()
        return Target(
            path: path, collectionGroup: group, filters: filters, orderBys: orderBys, limit: limit,
            startAt: start, endAt: end, includeDeleted: includeDeleted)
    }

    /// Appends a filter (composites recursively).
    static func write(_ f: Filter, to w: inout ByteWriter) {
        switch f {
        case .field(let ff):
            w.byte(0)
            w.fieldPath(ff.field)
            w.byte(UInt8(operators.firstIndex(of: ff.op)!))
            w.value(ff.value)
        case .composite(let c):
            w.byte(1)
            w.byte(c.op == .and ? 0 : 1)
            w.varint(UInt64(c.filters.count))
            for member in c.filters { write(member, to: &w) }
        }
    }

    /// Reads a filter, refusing composites nested deeper than `maxFilterDepth`.
    static func readFilter(_ r: inout ByteReader, depth: Int) throws(DocError) -> Filter {
        let at = r.offset
        switch try r.byte() {
        case 0:
            let field = try r.fieldPath()
            let opAt = r.offset
            let op = Int(try r.byte())
            guard op < operators.count else { throw r.fail("unknown filter operator", at: opAt) }
            return .field(FieldFilter(field, operators[op], try r.value()))
        case 1:
            guard depth < maxFilterDepth else { throw r.fail("filters nested deeper than \(maxFilterDepth)", at: at) }
            let opAt = r.offset
            let op: CompositeFilter.Operator
            switch try r.byte() {
            case 0: op = .and
            case 1: op = .or
            default: throw r.fail("unknown composite operator", at: opAt)
            }
            let n = try r.count("composite member count")
            var members: [Filter] = []
            members.reserveCapacity(n)
            for _ in 0..<n { members.append(try readFilter(&r, depth: depth + 1)) }
            return .composite(CompositeFilter(op, members))
        default:
            throw r.fail("unknown filter kind", at: at)
        }
    }

    /// Appends a cursor bound.
    static func write(_ b: Bound, to w: inout ByteWriter) {
        w.flag(b.inclusive)
        w.varint(UInt64(b.position.count))
        for v in b.position { w.value(v) }
    }

    /// Reads a cursor bound.
    static func readBound(_ r: inout ByteReader) throws(DocError) -> Bound {
        let inclusive = try r.flag()
        let n = try r.count("cursor position count")
        var position: [Value] = []
        position.reserveCapacity(n)
        for _ in 0..<n { position.append(try r.value()) }
        return Bound(position: position, inclusive: inclusive)
    }
}
