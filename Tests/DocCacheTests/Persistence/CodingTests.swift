import Testing
@testable import DocCache
import DocModel
import DocTestTraits

/// Structural comparisons stricter than the model's `==` (which compares targets by
/// canonical id): filter order, nesting and value identity must survive a round trip.
enum Strict {
    static func same(_ a: Target, _ b: Target) -> Bool {
        a.path == b.path && a.collectionGroup == b.collectionGroup
            && a.filters.count == b.filters.count && zip(a.filters, b.filters).allSatisfy(same)
            && a.orderBys == b.orderBys && a.limit == b.limit
            && same(a.startAt, b.startAt) && same(a.endAt, b.endAt) && a.includeDeleted == b.includeDeleted
    }

    static func same(_ a: Filter, _ b: Filter) -> Bool {
        switch (a, b) {
        case let (.field(x), .field(y)):
            return x.field == y.field && x.op == y.op && x.value.isIdentical(to: y.value)
        case let (.composite(x), .composite(y)):
            return x.op == y.op && x.filters.count == y.filters.count && zip(x.filters, y.filters).allSatisfy(same)
        default:
            return false
        }
    }

    static func same(_ a: Bound?, _ b: Bound?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (x?, y?):
            return x.inclusive == y.inclusive && x.position.count == y.position.count
                && zip(x.position, y.position).allSatisfy { $0.isIdentical(to: $1) }
        default: return false
        }
    }

    static func same(_ a: TargetData, _ b: TargetData) -> Bool {
        same(a.target, b.target) && a.targetID == b.targetID && a.purpose == b.purpose
            && a.sequenceNumber == b.sequenceNumber && a.snapshotVersion == b.snapshotVersion
            && a.lastLimboFreeSnapshotVersion == b.lastLimboFreeSnapshotVersion
            && a.resumeToken == b.resumeToken && a.expectedCount == b.expectedCount
    }
}

extension PersistenceRNG {
    mutating func object() -> ObjectValue {
        var fields: [String: Value] = [:]
        for _ in 0..<int(0..<4) { fields[pick(Self.fieldNames)] = value() }
        return ObjectValue(fields)
    }

    mutating func transform() -> FieldTransform {
        let path = fieldPath()
        switch int(0..<4) {
        case 0: return .serverTimestamp(path)
        case 1: return .increment(path, by: chance(0.5) ? .integer(Int64(int(-5..<5))) : .double(0.5))
        case 2: return .arrayUnion(path, (0..<int(0..<3)).map { _ in value(depth: 1) })
        default: return .arrayRemove(path, (0..<int(0..<3)).map { _ in value(depth: 1) })
        }
    }

    mutating func mutation() -> Mutation {
        let kind: Mutation.Kind
        switch int(0..<5) {
        case 0: kind = .set(object())
        case 1: kind = .patch(object(), FieldMask((0..<int(0..<4)).map { _ in fieldPath() }))
        case 2: kind = .delete
        case 3: kind = .tombstone
        default: kind = .verify
        }
        let precondition: Precondition
        switch int(0..<4) {
        case 0: precondition = .none
        case 1: precondition = .exists(chance(0.5))
        case 2: precondition = .updateTime(SnapshotVersion(microseconds: Int64(int(-3..<1_000_000))))
        default: precondition = .none
        }
        return Mutation(key: documentKey(), kind: kind, fieldTransforms: (0..<int(0..<3)).map { _ in transform() }, precondition: precondition)
    }

    mutating func filter(depth: Int = 0) -> Filter {
        if depth < 3, chance(0.3) {
            let members = (0..<int(0..<4)).map { _ in filter(depth: depth + 1) }
            return chance(0.5) ? .and(members) : .or(members)
        }
        return .where(fieldPath(), pick(FieldFilter.Operator.allCases), value())
    }

    mutating func bound() -> Bound {
        Bound(position: (0..<int(0..<3)).map { _ in value() }, inclusive: chance(0.5))
    }

    mutating func target() -> Target {
        let group = chance(0.3) ? pick(["msgs", "é", "a b"]) : nil
        let path = group != nil
            ? pick([ResourcePath.root, PersistenceFixtures.path("rooms/a")])
            : PersistenceFixtures.path(pick(["rooms", "rooms/a/msgs", "rooms/a"]))
        return Target(
            path: path, collectionGroup: group, filters: (0..<int(0..<4)).map { _ in filter() },
            orderBys: (0..<int(0..<3)).map { _ in OrderBy(fieldPath(), chance(0.5) ? .ascending : .descending) }
                + [OrderBy(.documentID, .ascending)],
            limit: chance(0.5) ? int(0..<10_000) : nil,
            startAt: chance(0.4) ? bound() : nil, endAt: chance(0.4) ? bound() : nil, includeDeleted: chance(0.3))
    }

    mutating func targetData() -> TargetData {
        TargetData(
            target: target(), targetID: TargetID(int(-2..<100_000)), purpose: pick([.listen, .existenceFilterMismatch, .limboResolution]),
            sequenceNumber: Int64(int(0..<1 << 40)), snapshotVersion: SnapshotVersion(microseconds: Int64(int(0..<1 << 50))),
            lastLimboFreeSnapshotVersion: SnapshotVersion(microseconds: Int64(int(0..<1 << 50))),
            resumeToken: (0..<int(0..<20)).map { _ in UInt8(int(0..<256)) },
            expectedCount: chance(0.5) ? int(0..<1000) : nil)
    }
}

@Suite("Persistence encodings", .cpuBound)
struct CodingTests {
    typealias F = PersistenceFixtures

    static let table: [Mutation] = {
        let k = F.key("rooms/a")
        return [
            .set(k, ObjectValue(["a": 1, "nested": ["b": [1, "two", .null]], "t": .timestamp(F.time(-5, 999_999_999))])),
            .create(k, ObjectValue(["x": .double(-0.0)])),
            .setMerge(k, ObjectValue(["a": ["b": 1]]), fields: [F.field("a.b"), F.field("gone")]),
            .setMerge(k, ObjectValue(["a": 1]), transforms: [.serverTimestamp(F.field("at"))]),
            .update(k, fields: [F.field("`odd.name`"): "v"], deleting: [F.field("old")], transforms: [.increment(F.field("n"), by: 1.5)]),
            .delete(k),
            .delete(k, precondition: .updateTime(F.version(123))),
            .tombstone(k),
            .tombstone(k, transforms: [.arrayUnion(F.field("log"), ["x", 1, 1.0])], precondition: .exists(true)),
            .verify(k, .updateTime(F.version(7))),
            Mutation(key: k, kind: .set(ObjectValue()), fieldTransforms: [
                .increment(F.field("i"), by: .integer(.min)), .arrayRemove(F.field("r"), []), .arrayUnion(F.field("u"), [["m": .null]]),
            ], precondition: .exists(false)),
        ]
    }()

    @Test func mutationTableRoundTrips() throws {
        for (i, m) in Self.table.enumerated() {
            let decoded = try MutationCoding.decodeMutation(MutationCoding.encode(m))
            #expect(decoded == m, "mutation \(i): \(m)")
            #expect(decoded.precondition == m.precondition && decoded.fieldTransforms == m.fieldTransforms)
        }
        let batch = MutationBatch(batchID: 77, localWriteTime: F.time(1_700_000_000, 5), baseMutations: [Self.table[0]], mutations: Self.table)
        #expect(try MutationCoding.decodeBatch(MutationCoding.encode(batch)) == batch)
        // Compact: a one-field set of a short key is a few dozen bytes.
        let small = MutationBatch(batchID: 1, localWriteTime: F.time(1), mutations: [.set(F.key("a/b"), ObjectValue(["n": 1]))])
        #expect(MutationCoding.encode(small).count <= 32)
    }

    @Test(arguments: [21, 22, 23, 24] as [UInt64])
    func randomMutationBatchesRoundTrip(seed: UInt64) throws {
        var rng = PersistenceRNG(seed: seed)
        for i in 0..<150 {
            let batch = MutationBatch(
                batchID: rng.int(1..<Int.max), localWriteTime: F.time(Int64(rng.int(-62_135_596_800..<253_402_300_799)), Int32(rng.int(0..<1_000_000_000))),
                baseMutations: (0..<rng.int(0..<2)).map { _ in rng.mutation() },
                mutations: (0..<rng.int(0..<4)).map { _ in rng.mutation() })
            let decoded = try MutationCoding.decodeBatch(MutationCoding.encode(batch))
            #expect(decoded == batch, "seed \(seed) case \(i)")
        }
    }

    @Test(arguments: [31, 32, 33, 34] as [UInt64])
    func randomTargetsAndTargetDataRoundTrip(seed: UInt64) throws {
        var rng = PersistenceRNG(seed: seed)
        for i in 0..<150 {
            let data = rng.targetData()
            let decoded = try TargetCoding.decodeTargetData(TargetCoding.encode(data))
            #expect(Strict.same(decoded, data), "seed \(seed) case \(i): \(data.target)")
            #expect(decoded == data)
            #expect(decoded.target.canonicalID == data.target.canonicalID)
            let target = try TargetCoding.decodeTarget(TargetCoding.encode(data.target))
            #expect(Strict.same(target, data.target), "seed \(seed) case \(i)")
        }
    }

    @Test func queryTargetsRoundTrip() throws {
        let queries: [Query] = [
            try Query(collection: "rooms"),
            try Query(collection: "rooms").filter("a", .greaterThan, 1).order(by: "a", descending: true).limit(to: 3),
            try Query(collection: "rooms").order(by: "n").limit(toLast: 2).start(after: [5]).end(at: [9]),
            try Query(collectionGroup: "msgs", parent: F.path("rooms/a")).filter(.or([
                .where(F.field("x"), .in, [1, 2]), .and([.where(F.field("y"), .notEqual, .null), .where(F.field("z"), .arrayContainsAny, ["q"])]),
            ])),
            Query(document: F.key("rooms/a")).includingDeleted(),
        ]
        for q in queries {
            let t = try q.toTarget()
            let decoded = try TargetCoding.decodeTarget(TargetCoding.encode(t))
            #expect(Strict.same(decoded, t), "\(q)")
            #expect(decoded.canonicalID == t.canonicalID)
        }
    }

    @Test func corruptRecordsAreDataLossNeverATrap() throws {
        var rng = PersistenceRNG(seed: 41)
        let batch = MutationBatch(batchID: 3, localWriteTime: F.time(9), baseMutations: [rng.mutation()], mutations: Self.table)
        let encodedBatch = MutationCoding.encode(batch)
        let encodedTarget = TargetCoding.encode(rng.targetData())
        for cut in 0..<encodedBatch.count {
            let e = #expect(throws: DocError.self) { try MutationCoding.decodeBatch(Array(encodedBatch[..<cut])) }
            #expect(e?.code == .dataLoss)
        }
        for cut in 0..<encodedTarget.count {
            let e = #expect(throws: DocError.self) { try TargetCoding.decodeTargetData(Array(encodedTarget[..<cut])) }
            #expect(e?.code == .dataLoss)
        }
        #expect(throws: DocError.self) { try MutationCoding.decodeBatch(encodedBatch + [0]) }
        var wrongFormat = encodedBatch
        wrongFormat[0] = 9
        let format = #expect(throws: DocError.self) { try MutationCoding.decodeBatch(wrongFormat) }
        #expect(format?.message.contains("unsupported format 9") == true)
        // Random byte flips: an error or some batch, never a crash.
        for _ in 0..<500 {
            var bytes = encodedBatch
            bytes[rng.int(0..<bytes.count)] = UInt8(rng.int(0..<256))
            _ = try? MutationCoding.decodeBatch(bytes)
            var t = encodedTarget
            t[rng.int(0..<t.count)] = UInt8(rng.int(0..<256))
            _ = try? TargetCoding.decodeTargetData(t)
        }
    }

    @Test func documentRecordsKeepEveryFlag() throws {
        for (i, document) in RemoteDocumentCacheTests.everyKind.enumerated() {
            let (decoded, extra) = try DocumentRecord.decode(DocumentRecord.encode(document, extra: -Int64(i)), record: "test")
            #expect(decoded == document)
            #expect(extra == -Int64(i))
            // An overlay record reads the same document.
            let (overlay, overlayExtra) = try DocumentRecord.decodeOverlay(DocumentRecord.encode(document, extra: -Int64(i)), record: "test")
            #expect(overlay == document)
            #expect(overlayExtra == -Int64(i))
        }
    }

    @Test func batchReferencesAreOverlayRecordsOnly() throws {
        let reference = DocumentRecord.encodeBatchReference(4_711)
        #expect(reference.count <= 5, "format, flags and the batch id: \(reference)")
        let (document, id) = try DocumentRecord.decodeOverlay(reference, record: "overlay")
        #expect(document == nil)
        #expect(id == 4_711)
        // A remote document record never is one.
        let remote = #expect(throws: DocError.self) { try DocumentRecord.decode(reference, record: "remote document") }
        #expect(remote?.code == .dataLoss)
        #expect(remote?.message.contains("unknown flags") == true, "\(String(describing: remote))")
        // Nothing may follow the batch id, and no other flag goes with it.
        let trailing = #expect(throws: DocError.self) { try DocumentRecord.decodeOverlay(reference + [0], record: "overlay") }
        #expect(trailing?.code == .dataLoss)
        var flagged = reference
        flagged[1] |= DocumentRecord.noDocumentLocalMutations
        let mixed = #expect(throws: DocError.self) { try DocumentRecord.decodeOverlay(flagged, record: "overlay") }
        #expect(mixed?.code == .dataLoss)
    }
}

/// The local-write path builds its keys in one encoder; they must be the bytes the prefix
/// functions (used by the scans that find these rows) give.
@Suite("Key schema on the write path", .cpuBound)
struct WritePathKeyTests {
    @Test(arguments: ["", "alice", "user\u{0}with\u{FF}bytes"], ["rooms/r1", "a/b/c/d", "rooms/r1/notes/n\u{0}1"])
    func writePathKeysExtendTheirScanPrefixes(user: String, path: String) throws {
        let key = try DocumentKey(path)
        let id: BatchID = 4_711

        var mutation = KeyEncoder(prefix: KeySchema.mutationsPrefix(user))
        mutation.append(int64: Int64(id))
        #expect(KeySchema.mutation(user, id) == mutation.bytes)

        var documentMutation = KeyEncoder(prefix: KeySchema.documentMutationsPrefix(user, key))
        documentMutation.append(int64: Int64(id))
        #expect(KeySchema.documentMutation(user, key, id) == documentMutation.bytes)

        var overlay = KeyEncoder(prefix: KeySchema.overlaysPrefix(user, collection: key.collectionPath))
        overlay.append(string: key.documentID)
        #expect(KeySchema.overlay(user, key) == overlay.bytes)
        let (decodedUser, decodedKey) = try KeySchema.decodeOverlay(KeySchema.overlay(user, key))
        #expect(decodedUser == user)
        #expect(decodedKey == key)
    }
}
