internal import DocModel

// Binary encoding of mutation batches, the values of the mutation queue (see KeySchema.swift).
// Primitives as in ByteCoding.swift.
//
//   batch         format 0x01, zigzag batch id, local write time (zigzag seconds, varint
//                 nanos), varint count + base mutations, varint count + mutations
//   mutation      document key (segments), kind byte and its payload, varint count +
//                 transforms, precondition
//   kind          0 set: object value (length-prefixed ObjectValue.binaryEncoded())
//                 1 patch: object value, varint count + field paths of the mask
//                 2 delete   3 tombstone   4 verify
//   transform     field path, op byte: 0 serverTimestamp, 1 increment + value,
//                 2 arrayUnion + value (an array), 3 arrayRemove + value (an array)
//   precondition  0 none, 1 exists(false), 2 exists(true), 3 updateTime + zigzag µs
//
// Field paths are their segment lists. Values use DocModel's binary value encoding.

/// Encodes and decodes ``MutationBatch``es and ``Mutation``s for storage.
enum MutationCoding {
    /// The format byte of a stored batch.
    static let batchFormat: UInt8 = 1

    private enum Kind: UInt8 { case set = 0, patch, delete, tombstone, verify }
    private enum Op: UInt8 { case serverTimestamp = 0, increment, arrayUnion, arrayRemove }
    private enum Pre: UInt8 { case none = 0, notExists, exists, updateTime }

    /// The stored form of a batch. `firstEncodedData`, when the caller has it already, is
    /// `binaryEncoded()` of the data of the batch's first mutation (a set or patch).
    static func encode(_ batch: MutationBatch, firstEncodedData: [UInt8]? = nil) -> [UInt8] {
        var w = ByteWriter(format: batchFormat, capacity: 128 + (firstEncodedData?.count ?? 0))
        w.zigzag(Int64(batch.batchID))
        w.timestamp(batch.localWriteTime)
        w.varint(UInt64(batch.baseMutations.count))
        for m in batch.baseMutations { write(m, to: &w) }
        w.varint(UInt64(batch.mutations.count))
        for (i, m) in batch.mutations.enumerated() { write(m, to: &w, encodedData: i == 0 ? firstEncodedData : nil) }
        return w.bytes
    }

    /// Decodes ``encode(_:)-swift.type.method`` output; `dataLoss` on corrupt input.
    static func decodeBatch(_ bytes: [UInt8]) throws(DocError) -> MutationBatch {
        var r = ByteReader(bytes, record: "mutation batch")
        let format = try r.byte()
        guard format == batchFormat else {
            throw r.fail("unsupported format \(format) (this build reads format \(batchFormat))", at: 0)
        }
        let id = try r.int()
        let time = try r.timestamp()
        let baseCount = try r.count("base mutation count")
        var base: [Mutation] = []
        base.reserveCapacity(baseCount)
        for _ in 0..<baseCount { base.append(try read(&r)) }
        let count = try r.count("mutation count")
        var mutations: [Mutation] = []
        mutations.reserveCapacity(count)
        for _ in 0..<count { mutations.append(try read(&r)) }
        try r.finish()
        return MutationBatch(batchID: id, localWriteTime: time, baseMutations: base, mutations: mutations)
    }

    /// The stored form of one mutation (for tests and tools; batches embed mutations).
    static func encode(_ mutation: Mutation) -> [UInt8] {
        var w = ByteWriter()
        write(mutation, to: &w)
        return w.bytes
    }

    /// Decodes ``encode(_:)-swift.type.method`` output of a single mutation.
    static func decodeMutation(_ bytes: [UInt8]) throws(DocError) -> Mutation {
        var r = ByteReader(bytes, record: "mutation")
        let m = try read(&r)
        try r.finish()
        return m
    }

    // MARK: Parts

    /// Appends one mutation. `encodedData`, when given, is `binaryEncoded()` of its data.
    static func write(_ m: Mutation, to w: inout ByteWriter, encodedData: [UInt8]? = nil) {
        w.documentKey(m.key)
        switch m.kind {
        case .set(let data):
            w.byte(Kind.set.rawValue)
            w.lengthPrefixed(encodedData ?? data.binaryEncoded())
        case .patch(let data, let mask):
            w.byte(Kind.patch.rawValue)
            w.lengthPrefixed(encodedData ?? data.binaryEncoded())
            w.varint(UInt64(mask.paths.count))
            for p in mask.paths { w.fieldPath(p) }
        case .delete: w.byte(Kind.delete.rawValue)
        case .tombstone: w.byte(Kind.tombstone.rawValue)
        case .verify: w.byte(Kind.verify.rawValue)
        }
        w.varint(UInt64(m.fieldTransforms.count))
        for t in m.fieldTransforms {
            w.fieldPath(t.path)
            switch t.operation {
            case .serverTimestamp: w.byte(Op.serverTimestamp.rawValue)
            case .increment(let v):
                w.byte(Op.increment.rawValue)
                w.value(v)
            case .arrayUnion(let vs):
                w.byte(Op.arrayUnion.rawValue)
                w.value(.array(vs))
            case .arrayRemove(let vs):
                w.byte(Op.arrayRemove.rawValue)
                w.value(.array(vs))
            }
        }
        switch m.precondition {
        case .none: w.byte(Pre.none.rawValue)
        case .exists(let e): w.byte(e ? Pre.exists.rawValue : Pre.notExists.rawValue)
        case .updateTime(let v):
            w.byte(Pre.updateTime.rawValue)
            w.zigzag(v.microseconds)
        }
    }

    /// Reads one mutation.
    static func read(_ r: inout ByteReader) throws(DocError) -> Mutation {
        let key = try r.documentKey()
        let kindAt = r.offset
        let kind: Mutation.Kind
        switch Kind(rawValue: try r.byte()) {
        case .set?:
            kind = .set(try object(&r))
        case .patch?:
            let data = try object(&r)
            let n = try r.count("mask path count")
            var paths: [FieldPath] = []
            paths.reserveCapacity(n)
            for _ in 0..<n { paths.append(try r.fieldPath()) }
            kind = .patch(data, FieldMask(paths))
        case .delete?: kind = .delete
        case .tombstone?: kind = .tombstone
        case .verify?: kind = .verify
        case nil: throw r.fail("unknown mutation kind", at: kindAt)
        }
        let n = try r.count("transform count")
        var transforms: [FieldTransform] = []
        transforms.reserveCapacity(n)
        for _ in 0..<n {
            let path = try r.fieldPath()
            let opAt = r.offset
            switch Op(rawValue: try r.byte()) {
            case .serverTimestamp?: transforms.append(FieldTransform(path, .serverTimestamp))
            case .increment?: transforms.append(FieldTransform(path, .increment(try r.value())))
            case .arrayUnion?: transforms.append(FieldTransform(path, .arrayUnion(try array(&r))))
            case .arrayRemove?: transforms.append(FieldTransform(path, .arrayRemove(try array(&r))))
            case nil: throw r.fail("unknown transform operation", at: opAt)
            }
        }
        let preAt = r.offset
        let precondition: Precondition
        switch Pre(rawValue: try r.byte()) {
        case .none?: precondition = .none
        case .notExists?: precondition = .exists(false)
        case .exists?: precondition = .exists(true)
        case .updateTime?: precondition = .updateTime(SnapshotVersion(microseconds: try r.zigzag()))
        case nil: throw r.fail("unknown precondition", at: preAt)
        }
        return Mutation(key: key, kind: kind, fieldTransforms: transforms, precondition: precondition)
    }

    private static func object(_ r: inout ByteReader) throws(DocError) -> ObjectValue {
        let at = r.offset
        let raw = try r.lengthPrefixed()
        do {
            return try ObjectValue(binary: raw)
        } catch {
            throw r.fail("bad object value (\(error.message))", at: at)
        }
    }

    private static func array(_ r: inout ByteReader) throws(DocError) -> [Value] {
        let at = r.offset
        guard case .array(let elements) = try r.value() else { throw r.fail("expected an array value", at: at) }
        return elements
    }
}
