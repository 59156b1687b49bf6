import Testing
@testable import DocModel
import DocTestTraits

@Suite("Mutation validation and limits", .cpuBound)
struct MutationValidationTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var mutation: Mutation
        /// A fragment of the message, and the field the location must name.
        var message: String
        var field: String?
        var description: String { name }
    }

    static let k = Fx.key
    static func p(_ s: String) -> FieldPath { Fx.path(s) }

    static let invalid: [Case] = [
        Case(name: "reserved field name in set", mutation: .set(k, ObjectValue(["__x__": 1])), message: "reserved", field: "__x__"),
        Case(name: "nested array in data", mutation: .set(k, ObjectValue(["a": [[1]]])), message: "arrays", field: "a"),
        Case(name: "reserved name in a nested map", mutation: .set(k, ObjectValue(["m": ["ok": 1, "n": ["__x__": 1]]])),
             message: "reserved", field: "m.n.__x__"),
        Case(name: "empty name in a map inside an array", mutation: .set(k, ObjectValue(["a": [1, ["": 2]]])),
             message: "empty", field: "a"),
        Case(name: "pending server timestamp as data",
             mutation: .set(k, ObjectValue(["m": ["t": Fx.pending()]])), message: "pending server timestamp", field: "m.t"),
        Case(name: "pending server timestamp in patch data",
             mutation: .update(k, fields: [p("t"): Fx.pending()]), message: "pending server timestamp", field: "t"),
        Case(name: "increment of a string", mutation: .update(k, fields: [:], transforms: [.increment(p("n"), by: "1")]),
             message: "increment", field: "n"),
        Case(name: "increment of null", mutation: .update(k, fields: [:], transforms: [.increment(p("n.m"), by: nil)]),
             message: "increment", field: "n.m"),
        Case(name: "arrayUnion of an array", mutation: .update(k, fields: [:], transforms: [.arrayUnion(p("tags"), [1, [2]])]),
             message: "arrayUnion", field: "tags"),
        Case(name: "arrayRemove of an array", mutation: .update(k, fields: [:], transforms: [.arrayRemove(p("tags"), [[2]])]),
             message: "arrayRemove", field: "tags"),
        Case(name: "arrayUnion of a map holding a nested array",
             mutation: .update(k, fields: [:], transforms: [.arrayUnion(p("tags"), [["m": [[1]]]])]), message: "arrays", field: "tags"),
        Case(name: "arrayUnion of a pending server timestamp",
             mutation: .update(k, fields: [:], transforms: [.arrayUnion(p("tags"), [Fx.pending()])]),
             message: "pending server timestamp", field: "tags"),
        Case(name: "timestamp after 9999 in set data",
             mutation: .set(k, ObjectValue(["m": ["t": .timestamp(Timestamp(uncheckedSeconds: .max, nanos: 0))]])),
             message: "outside 0001-01-01", field: "m.t"),
        Case(name: "timestamp before 0001 in patch data",
             mutation: .update(k, fields: [p("t"): .timestamp(Timestamp(uncheckedSeconds: Timestamp.minSeconds - 1, nanos: 0))]),
             message: "outside 0001-01-01", field: "t"),
        Case(name: "arrayUnion of a timestamp out of range",
             mutation: .update(k, fields: [:], transforms: [.arrayUnion(p("days"), [.timestamp(Timestamp(uncheckedSeconds: .min, nanos: 0))])]),
             message: "outside 0001-01-01", field: "days"),
        Case(name: "501 field transforms",
             mutation: .update(k, fields: [:], transforms: (0...500).map { .increment(p("n\($0)"), by: 1) }),
             message: "the limit is 500", field: nil),
        Case(name: "transform of a set field",
             mutation: .set(k, ObjectValue(["n": 1]), transforms: [.increment(p("n"), by: 1)]), message: "also written", field: "n"),
        Case(name: "transform above set data",
             mutation: .set(k, ObjectValue(["m": ["a": 1]]), transforms: [.serverTimestamp(p("m"))]), message: "also written", field: "m"),
        Case(name: "transform inside a set scalar",
             mutation: .set(k, ObjectValue(["m": 1]), transforms: [.serverTimestamp(p("m.t"))]), message: "also written", field: "m.t"),
        Case(name: "transform of an updated field",
             mutation: .update(k, fields: [p("n"): 1], transforms: [.increment(p("n"), by: 1)]), message: "also written", field: "n"),
        Case(name: "transform inside a deleted field",
             mutation: .update(k, fields: [:], deleting: [p("m")], transforms: [.increment(p("m.n"), by: 1)]),
             message: "also written", field: "m.n"),
        Case(name: "transform above a masked field",
             mutation: .update(k, fields: [p("m.a"): 1], transforms: [.serverTimestamp(p("m"))]), message: "also written", field: "m"),
        Case(name: "same field transformed twice",
             mutation: .update(k, fields: [:], transforms: [.increment(p("n"), by: 1), .increment(p("n"), by: 2)]),
             message: "twice", field: "n"),
        Case(name: "overlapping transforms",
             mutation: .update(k, fields: [:], transforms: [.serverTimestamp(p("m")), .increment(p("m.n"), by: 2)]),
             message: "overlap", field: "m.n"),
        Case(name: "tombstone transforming deletedAt",
             mutation: .tombstone(k, transforms: [.serverTimestamp(p("deletedAt"))]), message: "tombstone", field: "deletedAt"),
        Case(name: "tombstone transforming inside updatedAt",
             mutation: .tombstone(k, transforms: [.increment(p("updatedAt.n"), by: 1)]), message: "tombstone", field: "updatedAt.n"),
        Case(name: "delete with transforms",
             mutation: Mutation(key: k, kind: .delete, fieldTransforms: [.serverTimestamp(p("t"))]), message: "delete", field: nil),
        Case(name: "transform of __name__", mutation: .update(k, fields: [:], transforms: [.serverTimestamp(.documentID)]),
             message: "document id", field: "__name__"),
        Case(name: "transform of a reserved name", mutation: .update(k, fields: [:], transforms: [.serverTimestamp(p("a.__b__"))]),
             message: "reserved", field: "a.__b__"),
        Case(name: "overlapping mask paths",
             mutation: Mutation(key: k, kind: .patch(ObjectValue(["a": ["b": 1]]), FieldMask([p("a"), p("a.b")]))),
             message: "inside", field: "a.b"),
        Case(name: "mask naming __name__",
             mutation: Mutation(key: k, kind: .patch(ObjectValue(), FieldMask([.documentID]))), message: "document id", field: "__name__"),
        Case(name: "field path over 1,500 bytes",
             mutation: .set(k, ObjectValue(["a": [String(repeating: "x", count: 1000): [String(repeating: "y", count: 500): 1]]])),
             message: "longer than 1500", field: nil),
        Case(name: "escaped field name over 1,500 bytes",
             mutation: .set(k, ObjectValue([String(repeating: "`", count: 750): 1])), message: "longer than 1500", field: nil),
        Case(name: "document over 1 MiB",
             mutation: .set(k, ObjectValue(["big": .string(String(repeating: "x", count: 1_048_576))])), message: "1 MiB", field: nil),
    ]

    @Test(arguments: invalid)
    func rejected(_ c: Case) {
        do {
            try c.mutation.validate()
            Issue.record("\(c.name) was accepted")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(c.message), "\(error)")
            #expect(error.location?.contains("users/alice") == true, "names the document: \(error)")
            if let field = c.field {
                #expect(error.location?.contains(field) == true, "names the field: \(error)")
            }
            // Checking while encoding (a local write) refuses it with the same error.
            #expect(throws: error) { _ = try c.mutation.validatedDataEncoding() }
        }
        // The server rejects it too, before storing anything.
        #expect(throws: DocError.self) { try c.mutation.applyOnServer(nil, commitVersion: Fx.v2) }
    }

    static let valid: [Mutation] = [
        .set(k, ObjectValue(["m": ["a": 1]]), transforms: [.serverTimestamp(p("m.t")), .increment(p("n"), by: .double(0.5))]),
        .set(k, ObjectValue([:]), transforms: [.arrayUnion(p("tags"), [1, ["m": [1, 2]]])]),
        .setMerge(k, ObjectValue(["m": ["a": 1]]), transforms: [.serverTimestamp(p("m.t"))]),
        .update(k, fields: [p("m"): ["a": 1]], transforms: [.serverTimestamp(p("m.t"))]),
        .update(k, fields: [p("a.b"): 1, p("a.c"): 2], deleting: [p("d")], transforms: [.arrayRemove(p("a.e"), ["x"])]),
        .tombstone(k, transforms: [.increment(p("deletions"), by: 1)]),
        .delete(k),
        .verify(k, .updateTime(Fx.v1)),
        .create(k, ObjectValue(["a": .array([1, "two", ["three": 3]])])),
        // Field paths of exactly 1,500 bytes: plain (1 + 1 + 1498) and escaped (2 + 2 * 749).
        .set(k, ObjectValue(["a": [String(repeating: "x", count: 1498): 1]])),
        .set(k, ObjectValue([String(repeating: "`", count: 749): 1])),
    ]

    @Test(arguments: valid)
    func accepted(_ m: Mutation) throws {
        try m.validate()
        // Checking while encoding gives the data's storage encoding.
        let encoded = try m.validatedDataEncoding()
        switch m.kind {
        case .set(let data), .patch(let data, _): #expect(encoded == data.binaryEncoded())
        case .delete, .tombstone, .verify: #expect(encoded == nil)
        }
    }

    /// Random data (empty and reserved names, arrays in arrays, pending server timestamps,
    /// deep nesting) is refused or accepted alike by the plain check and the encoding one,
    /// with the same error (the first problem in key order), and an accepted document
    /// encodes as `binaryEncoded()` does.
    @Test func encodingCheckAgreesWithThePlainCheck() throws {
        var refused = 0
        for i in 0..<2000 {
            var g = RandomValueGenerator(seed: 0xD0C5, stream: i)
            var data = g.objectValue()
            if g.chance(0.3) {
                // Deep nesting, near the depth limit.
                var deep = Value.map(g.map(maxDepth: 1))
                for _ in 0..<g.int(15..<22) { deep = .map(["d": deep]) }
                data = ObjectValue(["deep": deep])
            }
            let plain = Result { () throws(DocError) in try DocumentLimits.validate(data, for: Fx.key, allowingPendingServerTimestamps: false) }
            let encoding = Result { () throws(DocError) in try DocumentLimits.validatedEncoding(of: data, for: Fx.key) }
            switch (plain, encoding) {
            case (.success, .success(let bytes)):
                #expect(bytes == data.binaryEncoded(), "seed 0xD0C5 stream \(i)")
            case (.failure(let a), .failure(let b)):
                refused += 1
                #expect(a == b, "stream \(i): \(a) vs \(b)")
            default:
                Issue.record("stream \(i): the checks disagree: \(plain) vs \(encoding)")
            }
        }
        // Both outcomes were exercised.
        #expect(refused > 100 && refused < 1900, "\(refused) of 2000 refused")
    }

    @Test func theSizeLimitIsExactAndCountsNestedFields() throws {
        func document(filler: Int) -> ObjectValue {
            ObjectValue(["m": ["s": .string(String(repeating: "x", count: filler)), "n": 1], "tags": ["x", 1, ["k": true]]])
        }
        let fill = DocumentLimits.maxDocumentBytes - DocumentLimits.storageSize(of: document(filler: 0), key: Fx.key)
        #expect(DocumentLimits.storageSize(of: document(filler: fill), key: Fx.key) == DocumentLimits.maxDocumentBytes)
        try DocumentLimits.validate(document(filler: fill), for: Fx.key)
        #expect(throws: DocError.self) { try DocumentLimits.validate(document(filler: fill + 1), for: Fx.key) }
    }

    @Test func serverChecksTheLimitsOfTheResult() throws {
        // Each write is under 1 MiB, but the merged document is not.
        let half = Value.string(String(repeating: "x", count: 600_000))
        let base = Fx.doc(["a": half])
        let merge = Mutation.setMerge(Fx.key, ObjectValue(["b": half]))
        try merge.validate()
        do {
            _ = try merge.applyOnServer(base, commitVersion: Fx.v2)
            Issue.record("over-limit document was stored")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("1 MiB"))
            #expect(error.location == "users/alice")
        }
        // The same merge on a small document is fine.
        #expect(try merge.applyOnServer(Fx.doc(["a": 1]), commitVersion: Fx.v2).0?.document?.data["b"] == half)
    }

    @Test func serverChecksDepthOfTheResult() throws {
        // Nesting 19 maps deep is allowed, but a transform adding a level under it makes 21.
        var deep: Value = 1
        for _ in 0..<19 { deep = ["m": deep] }
        let base = Fx.doc(["d": deep])
        try DocumentLimits.validate(ObjectValue(["d": deep]), for: Fx.key)
        let tooDeep = FieldPath(unchecked: ["d"] + Array(repeating: "m", count: 18) + ["y", "z"])
        let m = Mutation.update(Fx.key, fields: [:], transforms: [.arrayUnion(tooDeep, [1])])
        do {
            _ = try m.applyOnServer(base, commitVersion: Fx.v2)
            Issue.record("too deep document was stored")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("deeper"), "\(error)")
        }
    }
}
