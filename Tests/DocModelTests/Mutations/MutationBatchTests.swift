import Testing
@testable import DocModel
import DocTestTraits

@Suite("Mutation batches", .cpuBound)
struct MutationBatchTests {
    static let alice = Fx.key
    static let bob = Fx.otherKey

    static let batch = MutationBatch(
        batchID: 7, localWriteTime: Fx.localTime,
        baseMutations: [.set(alice, ObjectValue(["n": 100]))],
        mutations: [
            .update(alice, fields: [:], transforms: [.increment(Fx.path("n"), by: 1)]),
            .set(bob, ObjectValue(["b": true])),
            .update(alice, fields: [Fx.path("s"): "x"], transforms: [.serverTimestamp(Fx.path("t"))]),
        ])

    @Test func keys() {
        #expect(Self.batch.keys == [Self.alice, Self.bob])
    }

    @Test func localViewAppliesBaseMutationsThenMutationsOfTheKey() throws {
        let view = try #require(Self.batch.applyToLocalView(Fx.doc(["n": 1]), for: Self.alice)?.document)
        // The base mutation pins n to 100 before the increment.
        #expect(view.data["n"] == .integer(101))
        #expect(view.data["s"] == "x")
        #expect(view.data["t"]?.serverTimestampLocalWriteTime == Fx.localTime)
        #expect(view.data.fields["b"] == Value?.none, "bob's mutation is not applied to alice")
        #expect(view.hasLocalMutations)

        let bobView = Self.batch.applyToLocalView(nil, for: Self.bob)
        #expect(Fx.fields(bobView) == ["b": true])
        // A key the batch does not touch is returned as is.
        let carol = try DocumentKey("users/carol")
        #expect(Self.batch.applyToLocalView(nil, for: carol) == MaybeDocument?.none)
    }

    @Test func batchResultAndAcknowledgement() throws {
        let result = try MutationBatchResult(
            batch: Self.batch, commitVersion: Fx.v2,
            mutationResults: [
                MutationResult(version: Fx.v2, transformResults: [5]),
                MutationResult(version: SnapshotVersion.none),
                MutationResult(version: Fx.v2, transformResults: [Fx.commitTime]),
            ],
            streamToken: [1, 2, 3])
        #expect(result.docVersions == [Self.alice: Fx.v2, Self.bob: Fx.v2], "a none version falls back to the commit version")
        #expect(result.streamToken == [1, 2, 3])

        let acked = try #require(Self.batch.applyToRemoteDocument(Fx.doc(["n": 4]), for: Self.alice, result: result)?.document)
        #expect(acked.data.fields == ["n": 5, "s": "x", "t": Fx.commitTime], "base mutations are not acknowledged; server values win")
        #expect(acked.hasCommittedMutations)
        #expect(acked.version == Fx.v2)
    }

    @Test func resultCountMustMatch() {
        #expect(throws: DocError.self) {
            try MutationBatchResult(batch: Self.batch, commitVersion: Fx.v2, mutationResults: [MutationResult(version: Fx.v2)])
        }
    }

    @Test func mutationsAreHashableStructurally() {
        let a = Mutation.set(Fx.key, ObjectValue(["a": 1]))
        let b = Mutation.set(Fx.key, ObjectValue(["a": .double(1.0)]))
        #expect(a != b)
        #expect(a == Mutation.set(Fx.key, ObjectValue(["a": 1])))
        #expect(Set([a, b, a]).count == 2)
        #expect(Mutation.delete(Fx.key) != Mutation.tombstone(Fx.key))
        #expect(Mutation.delete(Fx.key) != Mutation.delete(Fx.key, precondition: .exists(true)))
        #expect(Self.batch == Self.batch)
        #expect(a.description.contains("users/alice"))
    }
}
