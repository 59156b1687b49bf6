import Testing
@testable import DocModel
import DocTestTraits

@Suite("Preconditions and field masks", .cpuBound)
struct PreconditionAndMaskTests {
    static let bases: [MaybeDocument?] = [
        nil,
        .noDocument(NoDocument(key: Fx.key, version: Fx.v1)),
        .unknown(UnknownDocument(key: Fx.key, version: Fx.v1)),
        Fx.doc(["a": 1], version: Fx.v1),
    ]

    @Test(arguments: [
        // missing, NoDocument, UnknownDocument, Document@v1
        (Precondition.none, [true, true, true, true]),
        (.exists(true), [false, false, false, true]),
        (.exists(false), [true, true, true, false]),
        (.updateTime(Fx.v1), [false, false, false, true]),
        (.updateTime(Fx.v2), [false, false, false, false]),
        (.updateTime(SnapshotVersion.none), [false, false, false, false]),
    ])
    func isValid(_ precondition: Precondition, _ expected: [Bool]) {
        #expect(Self.bases.map { precondition.isValid(for: $0) } == expected)
    }

    @Test func updateTimeMismatchOnServer() {
        let m = Mutation(key: Fx.key, kind: .set(ObjectValue(["a": 2])), precondition: .updateTime(Fx.v2))
        do {
            _ = try m.applyOnServer(Fx.doc(["a": 1], version: Fx.v1), commitVersion: SnapshotVersion(microseconds: 3_000_000))
            Issue.record("accepted")
        } catch {
            #expect(error.code == .failedPrecondition)
            #expect(error.message.contains("users/alice"), "\(error)")
            #expect(error.message.contains(Fx.v1.description))
        }
        // The local view skips it.
        let base = Fx.doc(["a": 1], version: Fx.v1)
        #expect(m.applyToLocalView(base, localWriteTime: Fx.localTime) == base)
    }

    @Test func updateOfMissingDocumentIsNotFound() {
        let m = Mutation.update(Fx.key, fields: [Fx.path("a"): 1])
        do {
            _ = try m.applyOnServer(nil, commitVersion: Fx.v2)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .notFound)
            #expect(error.message.contains("users/alice"))
        }
    }

    @Test func maskIsCanonical() {
        let a = FieldMask([Fx.path("b.c"), Fx.path("a"), Fx.path("b.c"), Fx.path("`x y`")])
        let b = FieldMask([Fx.path("`x y`"), Fx.path("a"), Fx.path("b.c")])
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a.paths == [Fx.path("a"), Fx.path("b.c"), Fx.path("`x y`")])
        #expect(a.count == 3)
        #expect(a.description == "{a, b.c, `x y`}")
        #expect(FieldMask.empty.isEmpty)
        #expect(a.union(FieldMask([Fx.path("z"), Fx.path("a")])).count == 4)
    }

    @Test(arguments: [
        ("a", true), ("a.b", true), ("a.b.c", true), ("ab", false), ("b", false), ("b.c", true), ("b.cd", false),
        ("b.c.d", true), ("c", false),
    ])
    func covers(_ path: String, _ expected: Bool) {
        let mask = FieldMask([Fx.path("a"), Fx.path("b.c")])
        #expect(mask.covers(Fx.path(path)) == expected)
    }

    @Test func maskDoesNotCoverItsParents() {
        let mask = FieldMask([Fx.path("b.c")])
        #expect(!mask.covers(Fx.path("b")))
        #expect(mask.contains(Fx.path("b.c")) && !mask.contains(Fx.path("b.c.d")))
    }

    @Test func patchMaskDeletesFieldsAbsentFromTheData() throws {
        // Masked paths without a value are deleted; unmasked data is ignored.
        let data = ObjectValue(["a": 10, "ignored": true, "m": ["x": 1]])
        let mask = FieldMask([Fx.path("a"), Fx.path("b"), Fx.path("m.y"), Fx.path("nope.deep")])
        let m = Mutation(key: Fx.key, kind: .patch(data, mask))
        let base = Fx.doc(["a": 1, "b": 2, "c": 3, "m": ["x": 0, "y": 0]])
        let expected: [String: Value] = ["a": 10, "c": 3, "m": ["x": 0]]
        #expect(Fx.fields(m.applyToLocalView(base, localWriteTime: Fx.localTime)) == expected)
        #expect(Fx.fields(try m.applyOnServer(base, commitVersion: Fx.v2).0) == expected)
        #expect(Fx.fields(m.applyToRemoteDocument(base, result: MutationResult(version: Fx.v2))) == expected)
    }

    @Test func updateDeletesAndSetsNestedFields() throws {
        let m = Mutation.update(Fx.key, fields: [Fx.path("m.n.o"): "deep", Fx.path("s"): 1], deleting: [Fx.path("m.x")])
        let base = Fx.doc(["m": ["x": 1, "y": 2], "s": "scalar"])
        let out = try m.applyOnServer(base, commitVersion: Fx.v2).0
        #expect(Fx.fields(out) == ["m": ["y": 2, "n": ["o": "deep"]], "s": 1])
        #expect(m.precondition == .exists(true))
    }

    @Test func setMergeWithNestedMaps() throws {
        let base = Fx.doc(["m": ["a": 1, "n": ["x": 1]], "top": true])
        let merge = Mutation.setMerge(Fx.key, ObjectValue(["m": ["n": ["y": 2], "b": 2]]))
        if case .patch(_, let mask) = merge.kind {
            #expect(mask.paths == [Fx.path("m.b"), Fx.path("m.n.y")])
        } else {
            Issue.record("set-merge is a patch")
        }
        #expect(merge.precondition == .none)
        let merged: [String: Value] = ["m": ["a": 1, "b": 2, "n": ["x": 1, "y": 2]], "top": true]
        #expect(Fx.fields(merge.applyToLocalView(base, localWriteTime: Fx.localTime)) == merged)
        #expect(Fx.fields(try merge.applyOnServer(base, commitVersion: Fx.v2).0) == merged)

        // An empty map is a leaf: it replaces the field.
        let empty = Mutation.setMerge(Fx.key, ObjectValue(["m": ["n": [:]]]))
        #expect(Fx.fields(try empty.applyOnServer(base, commitVersion: Fx.v2).0) == ["m": ["a": 1, "n": [:]], "top": true])

        // A merge onto a scalar replaces the scalar with a map.
        let onScalar = Mutation.setMerge(Fx.key, ObjectValue(["top": ["z": 1]]))
        #expect(Fx.fields(try onScalar.applyOnServer(base, commitVersion: Fx.v2).0)?["top"] == ["z": 1])
    }

    @Test func setMergeWithExplicitFields() throws {
        let base = Fx.doc(["a": 1, "b": 2, "c": 3])
        let m = Mutation.setMerge(Fx.key, ObjectValue(["a": 10, "b": 20]), fields: [Fx.path("a"), Fx.path("c")])
        // b is not in the merge fields (kept); c is, but has no value (deleted).
        #expect(Fx.fields(try m.applyOnServer(base, commitVersion: Fx.v2).0) == ["a": 10, "b": 2])
        // A merge field that a transform writes is left to the transform.
        let t = Mutation.setMerge(Fx.key, ObjectValue(["a": 1]), fields: [Fx.path("a"), Fx.path("n")],
                                  transforms: [.increment(Fx.path("n"), by: 1)])
        #expect(throws: Never.self) { try t.validate() }
        #expect(Fx.fields(try t.applyOnServer(Fx.doc(["n": 4]), commitVersion: Fx.v2).0) == ["a": 1, "n": 5])
    }
}
