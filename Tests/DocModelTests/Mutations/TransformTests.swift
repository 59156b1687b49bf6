import Testing
@testable import DocModel
import DocTestTraits

@Suite("Field transforms", .cpuBound)
struct TransformTests {
    /// Applies `transform` to field `n` of a document whose `n` is `base` (absent when nil),
    /// locally and on the server, and returns both values of `n`.
    static func run(_ transform: TransformOperation, on base: Value?) throws -> (local: Value?, server: Value?, result: Value?) {
        let doc = Fx.doc(base.map { ["n": $0, "other": true] } ?? ["other": true])
        let m = Mutation.update(Fx.key, fields: [:], transforms: [FieldTransform(Fx.path("n"), transform)])
        let local = m.applyToLocalView(doc, localWriteTime: Fx.localTime)?.document
        #expect(local?.data["other"] == true, "other fields are kept")
        #expect(local?.hasLocalMutations == true)
        let (stored, result) = try m.applyOnServer(doc, commitVersion: Fx.v2)
        return (local?.data["n"], stored?.document?.data["n"], result.transformResults.first)
    }

    static let incrementCases: [(Value, Value, Value)] = [
        // (base, operand, expected): integer + integer stays an integer and saturates.
        (Value.integer(5), Value.integer(3), Value.integer(8)),
        (.integer(-5), .integer(3), .integer(-2)),
        (.integer(.max - 1), .integer(5), .integer(.max)),
        (.integer(.max), .integer(.max), .integer(.max)),
        (.integer(.min + 1), .integer(-5), .integer(.min)),
        (.integer(.min), .integer(.min), .integer(.min)),
        (.integer(.max), .integer(-1), .integer(.max - 1)),
        // Any double involved gives a double.
        (.integer(1), .double(0.5), .double(1.5)),
        (.double(1.5), .integer(1), .double(2.5)),
        (.double(2.0), .integer(1), .double(3.0)),
        (.double(0.25), .double(0.5), .double(0.75)),
        (.integer(.max), .double(1.0), .double(9.223372036854775807e18)),
        // A base that is not a number counts as integer 0.
        ("text", .integer(2), .integer(2)),
        (.null, .integer(2), .integer(2)),
        ([1, 2], .double(1.5), .double(1.5)),
        (["n": 1], .integer(-1), .integer(-1)),
    ]

    @Test(arguments: incrementCases)
    func increment(_ base: Value, _ operand: Value, _ expected: Value) throws {
        let (local, server, result) = try Self.run(.increment(operand), on: base)
        #expect(local?.isIdentical(to: expected) == true, "local \(String(describing: local))")
        #expect(server?.isIdentical(to: expected) == true, "server \(String(describing: server))")
        #expect(result?.isIdentical(to: expected) == true, "the server reports the new value")
    }

    @Test func incrementOfMissingField() throws {
        let (local, server, _) = try Self.run(.increment(.double(1.5)), on: nil)
        #expect(local?.isIdentical(to: .double(1.5)) == true)
        #expect(server?.isIdentical(to: .double(1.5)) == true)
        let (l2, s2, _) = try Self.run(.increment(7), on: nil)
        #expect(l2?.isIdentical(to: .integer(7)) == true)
        #expect(s2?.isIdentical(to: .integer(7)) == true)
    }

    @Test func localIncrementsStackOnThePreviousLocalValue() {
        let inc = Mutation.update(Fx.key, fields: [:], transforms: [.increment(Fx.path("n"), by: 1)])
        var doc: MaybeDocument? = Fx.doc(["n": 5])
        for _ in 0..<3 { doc = inc.applyToLocalView(doc, localWriteTime: Fx.localTime) }
        #expect(doc?.document?.data["n"] == .integer(8))
        #expect(!inc.isIdempotent)
    }

    @Test func acknowledgedIncrementTakesTheServerValue() throws {
        let inc = Mutation.update(Fx.key, fields: [:], transforms: [.increment(Fx.path("n"), by: 1)])
        let cached = Fx.doc(["n": 5])
        // Another client raised n to 41 meanwhile: the server's 42 wins over the local 6.
        let acked = inc.applyToRemoteDocument(cached, result: MutationResult(version: Fx.v2, transformResults: [42]))
        #expect(acked?.document?.data["n"] == .integer(42))
        #expect(acked?.document?.hasCommittedMutations == true)
        #expect(acked?.document?.hasLocalMutations == false)
    }

    @Test func setWithIncrementStartsFromTheWrittenData() throws {
        // Transforms run on the data the set wrote (the backend's order), locally and on the server alike.
        let m = Mutation.set(Fx.key, ObjectValue(["a": 1]), transforms: [.increment(Fx.path("n"), by: 1)])
        let base = Fx.doc(["n": 10])
        #expect(m.applyToLocalView(base, localWriteTime: Fx.localTime)?.document?.data["n"] == .integer(1))
        #expect(try m.applyOnServer(base, commitVersion: Fx.v2).0?.document?.data["n"] == .integer(1))
    }

    static let arrayUnionCases: [(Value, [Value], Value)] = [
        // (base, operand, expected): 1 and 1.0 are distinct elements, as in Firestore.
        (Value.array([1, "a"]), [Value.double(1.0), 1, "b", "b"], Value.array([1, "a", .double(1.0), "b"])),
        (.array([]), [1, 1, 2], .array([1, 2])),
        (.array([["k": 1]]), [["k": 1], ["k": 1.0]], .array([["k": 1], ["k": .double(1.0)]])),
        (.array([.double(0.0)]), [.double(-0.0)], .array([.double(0.0), .double(-0.0)])),
        (.array([.double(.nan)]), [.double(.nan)], .array([.double(.nan)])),
        // Strings by their bytes: "é" precomposed and decomposed are two elements.
        (.array(["\u{E9}"]), ["e\u{301}", "\u{E9}"], .array(["\u{E9}", "e\u{301}"])),
        ("not an array", [1], .array([1])),
        (.null, [], .array([])),
    ]

    @Test(arguments: arrayUnionCases)
    func arrayUnion(_ base: Value, _ elements: [Value], _ expected: Value) throws {
        let (local, server, result) = try Self.run(.arrayUnion(elements), on: base)
        #expect(local?.isIdentical(to: expected) == true, "local \(String(describing: local))")
        #expect(server?.isIdentical(to: expected) == true, "server \(String(describing: server))")
        #expect(result == .null, "the server reports null for array transforms")
    }

    static let arrayRemoveCases: [(Value, [Value], Value)] = [
        (Value.array([1, .double(1.0), 2, 1, "1"]), [Value.integer(1)], Value.array([.double(1.0), 2, "1"])),
        (.array([1, 2, 3]), [3, 1, 9], .array([2])),
        (.array([["a": 1], ["a": 2]]), [["a": 1]], .array([["a": 2]])),
        (.array([1]), [], .array([1])),
        (.array(["\u{E9}", "e\u{301}", .double(-0.0), .double(0.0)]), ["e\u{301}", .double(0.0)], .array(["\u{E9}", .double(-0.0)])),
        (42, [42], .array([])),
    ]

    @Test(arguments: arrayRemoveCases)
    func arrayRemove(_ base: Value, _ elements: [Value], _ expected: Value) throws {
        let (local, server, result) = try Self.run(.arrayRemove(elements), on: base)
        #expect(local?.isIdentical(to: expected) == true, "local \(String(describing: local))")
        #expect(server?.isIdentical(to: expected) == true, "server \(String(describing: server))")
        #expect(result == .null)
    }

    @Test func arrayUnionOnMissingField() throws {
        let (local, server, _) = try Self.run(.arrayUnion(["x"]), on: nil)
        #expect(local == .array(["x"]))
        #expect(server == .array(["x"]))
    }

    @Test func acknowledgedArrayTransformsAreRecomputedFromTheCache() {
        let m = Mutation.update(Fx.key, fields: [:], transforms: [.arrayUnion(Fx.path("tags"), ["b"])])
        let acked = m.applyToRemoteDocument(Fx.doc(["tags": ["a"]]), result: MutationResult(version: Fx.v2, transformResults: [.null]))
        #expect(acked?.document?.data["tags"] == .array(["a", "b"]))
    }

    @Test func serverTimestampLocallyThenOnTheServer() throws {
        let previous = Value.timestamp(try Timestamp(seconds: 1_000))
        let (local, server, result) = try Self.run(.serverTimestamp, on: previous)
        let pending = try #require(local)
        #expect(pending.isServerTimestamp)
        #expect(pending.serverTimestampLocalWriteTime == Fx.localTime)
        #expect(pending.serverTimestampPreviousValue == previous)
        #expect(pending.isIdentical(to: Fx.pending(previous)))
        #expect(server == Fx.commitTime)
        #expect(result == Fx.commitTime)
    }

    @Test func serverTimestampWithoutPreviousValue() throws {
        let (local, _, _) = try Self.run(.serverTimestamp, on: nil)
        #expect(local?.isServerTimestamp == true)
        #expect(local?.serverTimestampPreviousValue == nil)
    }

    @Test func chainedLocalServerTimestampsKeepTheFirstPreviousValue() throws {
        let m = Mutation.update(Fx.key, fields: [:], transforms: [.serverTimestamp(Fx.path("t"))])
        let later = try Timestamp(seconds: 1_800_000_000)
        let first = m.applyToLocalView(Fx.doc(["t": "old"]), localWriteTime: Fx.localTime)
        let second = m.applyToLocalView(first, localWriteTime: later)
        let t = try #require(second?.document?.data["t"])
        #expect(t.serverTimestampLocalWriteTime == later)
        #expect(t.serverTimestampPreviousValue == "old")
    }

    @Test func acknowledgedServerTimestampReplacesThePendingValue() throws {
        let m = Mutation.update(Fx.key, fields: [:], transforms: [.serverTimestamp(Fx.path("t"))])
        let cached = Fx.doc(["t": 1])
        let acked = m.applyToRemoteDocument(cached, result: MutationResult(version: Fx.v2, transformResults: [Fx.commitTime]))
        #expect(acked?.document?.data["t"] == Fx.commitTime)
        #expect(acked?.document?.version == Fx.v2)
    }

    @Test func transformsAtNestedPaths() throws {
        let m = Mutation.setMerge(Fx.key, ObjectValue(["m": ["a": 1]]),
                                  transforms: [.increment(Fx.path("m.count"), by: 2), .serverTimestamp(Fx.path("meta.at"))])
        let base = Fx.doc(["m": ["count": 3, "b": true], "meta": "scalar"])
        let (stored, result) = try m.applyOnServer(base, commitVersion: Fx.v2)
        #expect(stored?.document?.data.fields == ["m": ["a": 1, "b": true, "count": 5], "meta": ["at": Fx.commitTime]])
        #expect(result.transformResults == [5, Fx.commitTime])
    }

    @Test func transformOperationEqualityIsStructural() {
        #expect(TransformOperation.increment(1) != .increment(.double(1.0)))
        #expect(TransformOperation.arrayUnion([1]) != .arrayUnion([.double(1.0)]))
        #expect(TransformOperation.arrayUnion([1]) != .arrayRemove([1]))
        #expect(TransformOperation.increment(1) == .increment(1))
        #expect(Set([TransformOperation.serverTimestamp, .serverTimestamp, .increment(1), .increment(.double(1.0))]).count == 3)
    }
}
