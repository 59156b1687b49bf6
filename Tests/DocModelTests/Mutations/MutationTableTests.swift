import Testing
@testable import DocModel
import DocTestTraits

/// Every mutation kind × base state × context, with the expected outcome.
@Suite("Mutation kinds × base states × contexts", .cpuBound)
struct MutationTableTests {
    enum Base: String, CaseIterable, Sendable {
        case missing, noDocument, unknown, existing

        var document: MaybeDocument? {
            switch self {
            case .missing: return nil
            case .noDocument: return .noDocument(NoDocument(key: Fx.key, version: Fx.v1))
            case .unknown: return .unknown(UnknownDocument(key: Fx.key, version: Fx.v1))
            case .existing: return Fx.doc(["a": 1, "b": ["c": 2, "k": "keep"]])
            }
        }
    }

    /// The expected outcome in one context; versions and flags follow from the context.
    enum Outcome: Sendable {
        case unchanged
        case data([String: Value])
        case noDocument
        case unknownDocument
        case error(DocError.Code)
    }

    struct Row: Sendable, CustomStringConvertible {
        var name: String
        var mutation: Mutation
        var base: Base
        var local: Outcome
        var server: Outcome
        var ack: Outcome
        var description: String { "\(name) on \(base)" }

        func outcome(_ context: Context) -> Outcome {
            switch context {
            case .local: return local
            case .server: return server
            case .ack: return ack
            }
        }
    }

    static let existingFields: [String: Value] = ["a": 1, "b": ["c": 2, "k": "keep"]]
    static let internalError = Outcome.error(.internal)

    static let rows: [Row] = {
        var rows: [Row] = []
        let key = Fx.key
        func add(_ name: String, _ m: Mutation, _ base: Base, _ l: Outcome, _ s: Outcome, _ a: Outcome) {
            rows.append(Row(name: name, mutation: m, base: base, local: l, server: s, ack: a))
        }
        let e = existingFields

        // set: replaces whatever is there.
        let set = Mutation.set(key, ObjectValue(["x": 1]))
        for base in [Base.missing, .noDocument] { add("set", set, base, .data(["x": 1]), .data(["x": 1]), .data(["x": 1])) }
        add("set", set, .unknown, .data(["x": 1]), internalError, .data(["x": 1]))
        add("set", set, .existing, .data(["x": 1]), .data(["x": 1]), .data(["x": 1]))

        // create: set with exists(false). The acknowledgement ignores the precondition (the server accepted it).
        let create = Mutation.create(key, ObjectValue(["x": 1]))
        for base in [Base.missing, .noDocument] { add("create", create, base, .data(["x": 1]), .data(["x": 1]), .data(["x": 1])) }
        add("create", create, .unknown, .data(["x": 1]), internalError, .data(["x": 1]))
        add("create", create, .existing, .unchanged, .error(.alreadyExists), .data(["x": 1]))

        // set-merge of a nested map: creates a missing document, merges into an existing one.
        let merge = Mutation.setMerge(key, ObjectValue(["b": ["d": 3]]))
        for base in [Base.missing, .noDocument] {
            add("setMerge", merge, base, .data(["b": ["d": 3]]), .data(["b": ["d": 3]]), .data(["b": ["d": 3]]))
        }
        add("setMerge", merge, .unknown, .data(["b": ["d": 3]]), internalError, .data(["b": ["d": 3]]))
        let merged: [String: Value] = ["a": 1, "b": ["c": 2, "d": 3, "k": "keep"]]
        add("setMerge", merge, .existing, .data(merged), .data(merged), .data(merged))

        // update: exists(true); deletes b.c; on a missing document the server says NOT_FOUND and the
        // acknowledgement cannot know the contents.
        let update = Mutation.update(key, fields: [Fx.path("a"): 5], deleting: [Fx.path("b.c")])
        for base in [Base.missing, .noDocument] { add("update", update, base, .unchanged, .error(.notFound), .unknownDocument) }
        add("update", update, .unknown, .unchanged, internalError, .unknownDocument)
        let updated: [String: Value] = ["a": 5, "b": ["k": "keep"]]
        add("update", update, .existing, .data(updated), .data(updated), .data(updated))

        // update-time precondition: the existing document is at v1.
        let guarded = Mutation(key: key, kind: .patch(ObjectValue(["a": 7]), FieldMask([Fx.path("a")])),
                               precondition: .updateTime(Fx.v1))
        for base in [Base.missing, .noDocument] { add("patch@v1", guarded, base, .unchanged, .error(.failedPrecondition), .unknownDocument) }
        add("patch@v1", guarded, .unknown, .unchanged, internalError, .unknownDocument)
        var patched = e; patched["a"] = 7
        add("patch@v1", guarded, .existing, .data(patched), .data(patched), .data(patched))

        // delete.
        let delete = Mutation.delete(key)
        for base in [Base.missing, .noDocument, .existing] { add("delete", delete, base, .noDocument, .noDocument, .noDocument) }
        add("delete", delete, .unknown, .noDocument, internalError, .noDocument)

        // tombstone: deletedAt/updatedAt become the commit time (locally pending), other fields stay.
        let tomb = Mutation.tombstone(key)
        let localMarks: [String: Value] = ["deletedAt": Fx.pending(), "updatedAt": Fx.pending()]
        let serverMarks: [String: Value] = ["deletedAt": Fx.commitTime, "updatedAt": Fx.commitTime]
        for base in [Base.missing, .noDocument] { add("tombstone", tomb, base, .data(localMarks), .data(serverMarks), .data(serverMarks)) }
        add("tombstone", tomb, .unknown, .data(localMarks), internalError, .data(serverMarks))
        add("tombstone", tomb, .existing, .data(e.merging(localMarks) { $1 }), .data(e.merging(serverMarks) { $1 }),
            .data(e.merging(serverMarks) { $1 }))

        // verify: checks only.
        let verify = Mutation.verify(key, .exists(true))
        for base in [Base.missing, .noDocument] { add("verify", verify, base, .unchanged, .error(.notFound), .unchanged) }
        add("verify", verify, .unknown, .unchanged, internalError, .unchanged)
        add("verify", verify, .existing, .unchanged, .unchanged, .unchanged)
        return rows
    }()

    /// The document the outcome stands for in `context` applied to `base`.
    static func expected(_ outcome: Outcome, _ context: Context, base: MaybeDocument?) -> MaybeDocument? {
        let found = base?.document
        switch outcome {
        case .unchanged:
            return base
        case .data(let fields):
            switch context {
            case .local:
                return .document(Document(key: Fx.key, data: ObjectValue(fields), version: SnapshotVersion.none,
                                          createTime: found?.createTime ?? SnapshotVersion.none, hasLocalMutations: true))
            case .server:
                return .document(Document(key: Fx.key, data: ObjectValue(fields), version: Fx.v2,
                                          createTime: found?.createTime ?? Fx.v2))
            case .ack:
                return .document(Document(key: Fx.key, data: ObjectValue(fields), version: Fx.v2,
                                          createTime: found?.createTime ?? Fx.v2, hasCommittedMutations: true))
            }
        case .noDocument:
            switch context {
            case .local: return .noDocument(NoDocument(key: Fx.key, version: SnapshotVersion.none, hasLocalMutations: true))
            case .server: return .noDocument(NoDocument(key: Fx.key, version: Fx.v2))
            case .ack: return .noDocument(NoDocument(key: Fx.key, version: Fx.v2, hasCommittedMutations: true))
            }
        case .unknownDocument:
            return .unknown(UnknownDocument(key: Fx.key, version: Fx.v2))
        case .error:
            return nil
        }
    }

    @Test(arguments: rows, Context.allCases)
    func outcome(_ row: Row, _ context: Context) {
        let base = row.base.document
        let applied = row.mutation.apply(context, to: base)
        let outcome = row.outcome(context)
        if case .error(let code) = outcome {
            guard let error = applied.error else {
                Issue.record("expected \(code), got \(String(describing: applied.document))")
                return
            }
            #expect(error.code == code, "\(error)")
            #expect(error.description.contains("users/alice"), "the error names the document: \(error)")
            return
        }
        if let error = applied.error {
            Issue.record("unexpected error \(error)")
            return
        }
        #expect(applied.document == Self.expected(outcome, context, base: base))
    }

    @Test func everyKindAndBaseIsCovered() {
        let kinds = Set(Self.rows.map(\.name))
        #expect(kinds == ["set", "create", "setMerge", "update", "patch@v1", "delete", "tombstone", "verify"])
        for kind in kinds {
            let bases = Set(Self.rows.filter { $0.name == kind }.map(\.base))
            #expect(bases == Set(Base.allCases), "\(kind)")
        }
    }

    @Test func tombstonedDocumentsAreTombstones() throws {
        let base = Fx.doc(["title": "draft", "updatedAt": 1])
        let tomb = Mutation.tombstone(Fx.key)
        let local = try #require(tomb.applyToLocalView(base, localWriteTime: Fx.localTime)?.document)
        #expect(local.isTombstone)
        #expect(local.data["title"] == "draft")
        #expect(local.data["deletedAt"]?.isServerTimestamp == true)
        #expect(local.data["updatedAt"]?.serverTimestampPreviousValue == .integer(1), "keeps the previous updatedAt")

        let (stored, result) = try tomb.applyOnServer(base, commitVersion: Fx.v2)
        let server = try #require(stored?.document)
        #expect(server.isTombstone)
        #expect(server.data["title"] == "draft")
        #expect(server.data["deletedAt"] == Fx.commitTime)
        #expect(server.data["updatedAt"] == Fx.commitTime)
        #expect(result.transformResults == [Fx.commitTime, Fx.commitTime])
        #expect(tomb.isTombstone && !Mutation.delete(Fx.key).isTombstone)
        #expect(tomb.effectiveTransforms.map(\.path) == [Fx.path("deletedAt"), Fx.path("updatedAt")])

        let acked = try #require(tomb.applyToRemoteDocument(base, result: result)?.document)
        #expect(acked.isTombstone)
        #expect(acked.data == server.data)

        // A later tombstone moves deletedAt forward.
        let later = SnapshotVersion(microseconds: 3_000_000)
        let again = try tomb.applyOnServer(stored, commitVersion: later).0?.document
        #expect(again?.data["deletedAt"] == .timestamp(later.timestamp))
        #expect(again?.createTime == Fx.created)
    }

    @Test func deleteWithExistsPreconditionOnServer() {
        let m = Mutation.delete(Fx.key, precondition: .exists(true))
        #expect(throws: DocError.self) { try m.applyOnServer(nil, commitVersion: Fx.v2) }
        do {
            _ = try m.applyOnServer(.noDocument(NoDocument(key: Fx.key, version: Fx.v1)), commitVersion: Fx.v2)
        } catch {
            #expect(error.code == .notFound)
            #expect(error.message.contains("users/alice"))
        }
    }

    @Test func mismatchedKeysAreLeftAlone() {
        let other = Fx.doc(["a": 1], key: Fx.otherKey)
        let m = Mutation.set(Fx.key, ObjectValue(["x": 1]))
        #expect(m.applyToLocalView(other, localWriteTime: Fx.localTime) == other)
        #expect(m.applyToRemoteDocument(other, result: MutationResult(version: Fx.v2)) == other)
        #expect(throws: DocError.self) { try m.applyOnServer(other, commitVersion: Fx.v2) }
    }

    @Test func acknowledgementWithWrongResultCountIsUnknown() {
        let m = Mutation.update(Fx.key, fields: [:], transforms: [.serverTimestamp(Fx.path("t"))])
        let base = Fx.doc(["a": 1])
        let r = m.applyToRemoteDocument(base, result: MutationResult(version: Fx.v2, transformResults: []))
        #expect(r == .unknown(UnknownDocument(key: Fx.key, version: Fx.v2)))
        // The right count applies.
        let ok = m.applyToRemoteDocument(base, result: MutationResult(version: Fx.v2, transformResults: [Fx.commitTime]))
        #expect(ok?.document?.data["t"] == Fx.commitTime)
    }
}
