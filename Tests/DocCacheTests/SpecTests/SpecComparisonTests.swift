import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("Spec tests: event comparison", .cpuBound)
struct SpecTestsComparisonTests {
    private let queryA = SpecQuery(query: try! Query(collection: "a"), json: "a")
    private let queryB = SpecQuery(query: try! Query(collection: "b"), json: "b")

    private func doc(_ path: String, _ version: Int64, _ value: ObjectValue = ObjectValue(["v": 1]), local: Bool = false,
                     committed: Bool = false) -> SpecDocument {
        SpecDocument(
            key: try! DocumentKey(path), version: SnapshotVersion(microseconds: version), createTime: .none, value: value,
            hasLocalMutations: local, hasCommittedMutations: committed)
    }

    private func actual(_ query: SpecQuery, _ changes: [(SpecActualEvent.Kind, SpecDocument)], fromCache: Bool = false,
                        pending: Bool = false) -> SpecActualEvent {
        SpecActualEvent(query: query.query, changes: changes.map { ($0.0, $0.1) }, fromCache: fromCache, hasPendingWrites: pending)
    }

    @Test func equalEventsInAnyQueryOrderMatch() {
        var e1 = SpecEvent(query: queryA)
        e1.added = [doc("a/1", 10), doc("a/2", 10)]
        var e2 = SpecEvent(query: queryB)
        e2.removed = [doc("b/1", 5)]
        e2.fromCache = true
        let actual = [
            actual(queryB, [(.removed, doc("b/1", 5))], fromCache: true),
            actual(queryA, [(.added, doc("a/2", 10)), (.added, doc("a/1", 10))]),
        ]
        #expect(SpecComparison.compareEvents(expected: [e1, e2], actual: actual).isEmpty)
    }

    @Test func noExpectationMeansNoEvents() {
        #expect(SpecComparison.compareEvents(expected: nil, actual: []).isEmpty)
        let problems = SpecComparison.compareEvents(expected: nil, actual: [actual(queryA, [])])
        #expect(problems.count == 1 && problems[0].hasPrefix("unexpected event"))
    }

    @Test func reportsMissingAndExtraEvents() {
        let problems = SpecComparison.compareEvents(expected: [SpecEvent(query: queryA), SpecEvent(query: queryB)],
                                                    actual: [actual(queryA, [])])
        #expect(problems.contains { $0.hasPrefix("expected 2 event(s), got 1") })
        #expect(problems.contains { $0.hasPrefix("missing event") })
    }

    @Test func documentDetailsAreCompared() {
        var expected = SpecEvent(query: queryA)
        expected.modified = [doc("a/1", 10, local: true)]
        expected.hasPendingWrites = true
        #expect(SpecComparison.compareEvent(
            expected: expected, actual: actual(queryA, [(.modified, doc("a/1", 10, local: true))], pending: true)).isEmpty)
        // Wrong kind, version, state, value, metadata flags.
        #expect(!SpecComparison.compareEvent(
            expected: expected, actual: actual(queryA, [(.metadata, doc("a/1", 10, local: true))], pending: true)).isEmpty)
        #expect(!SpecComparison.compareEvent(
            expected: expected, actual: actual(queryA, [(.modified, doc("a/1", 11, local: true))], pending: true)).isEmpty)
        #expect(!SpecComparison.compareEvent(
            expected: expected, actual: actual(queryA, [(.modified, doc("a/1", 10, committed: true))], pending: true)).isEmpty)
        #expect(!SpecComparison.compareEvent(
            expected: expected,
            actual: actual(queryA, [(.modified, doc("a/1", 10, ObjectValue(["v": .double(1)]), local: true))], pending: true)
        ).isEmpty)
        #expect(SpecComparison.compareEvent(
            expected: expected, actual: actual(queryA, [(.modified, doc("a/1", 10, local: true))], pending: false))
            == ["hasPendingWrites"])
    }

    @Test func localMutationsWinOverCommittedOnes() {
        #expect(doc("a/1", 1, local: true).matches(doc("a/1", 1, local: true, committed: true)))
        #expect(!doc("a/1", 1, committed: true).matches(doc("a/1", 1)))
    }

    @Test func createTimeIsComparedOnlyWhenGiven() {
        var withCreateTime = doc("a/1", 5)
        let actualDoc = doc("a/1", 5)
        #expect(withCreateTime.matches(SpecDocument(
            key: actualDoc.key, version: actualDoc.version, createTime: SnapshotVersion(microseconds: 3), value: actualDoc.value,
            hasLocalMutations: false, hasCommittedMutations: false)))
        withCreateTime.createTime = SnapshotVersion(microseconds: 4)
        #expect(!withCreateTime.matches(actualDoc))
    }

    @Test func errorsAreComparedByCode() {
        var expected = SpecEvent(query: queryA)
        expected.errorCode = 7
        #expect(SpecComparison.compareEvent(
            expected: expected, actual: SpecActualEvent(query: queryA.query, error: DocError(.permissionDenied, "no"))).isEmpty)
        #expect(!SpecComparison.compareEvent(
            expected: expected, actual: SpecActualEvent(query: queryA.query, error: DocError(.notFound, "no"))).isEmpty)
        #expect(!SpecComparison.compareEvent(expected: expected, actual: actual(queryA, [])).isEmpty)
        #expect(!SpecComparison.compareEvent(
            expected: SpecEvent(query: queryA), actual: SpecActualEvent(query: queryA.query, error: DocError(.notFound, "no"))).isEmpty)
    }

    @Test func keySetsAreComparedIgnoringOrder() throws {
        let a = try DocumentKey("c/a"), b = try DocumentKey("c/b")
        #expect(SpecComparison.compareKeys("limbo", expected: [a, b], actual: [b, a]) == nil)
        #expect(SpecComparison.compareKeys("limbo", expected: [a], actual: [b]) == "limbo: missing c/a; unexpected c/b")
    }
}

@Suite("Spec tests: runner", .cpuBound)
struct SpecTestsRunnerTests {
    @Test func parsesKnownFailures() {
        let known = KnownFailures.parse("""
            # comment

            listen_spec_test.json :: Some test :: the reason :: with colons
            write_spec_test.json :: No reason ::
            garbage line
            """)
        #expect(known.reason(file: "listen_spec_test.json", test: "Some test") == "the reason :: with colons")
        #expect(known.entries.count == 1)
        #expect(known.problems.count == 2)
    }

    private func test(tags: [String] = [], config: SpecConfig = SpecConfig(), steps: [SpecStep] = []) -> SpecTest {
        SpecTest(name: "t", describeName: "d", tags: tags, comment: nil, config: config, steps: .success(steps))
    }

    @Test func skipsMultiClientNoIOSAndEagerGCTests() {
        #expect(SpecRunner.skipReason(test(tags: ["multi-client"]))?.hasPrefix("multi-client") == true)
        #expect(SpecRunner.skipReason(test(tags: ["no-ios"]))?.hasPrefix("no-ios") == true)
        #expect(SpecRunner.skipReason(test(tags: ["eager-gc"]))?.hasPrefix("eager-gc") == true)
        #expect(SpecRunner.skipReason(test(tags: ["durable-persistence"])) == nil)
        #expect(SpecRunner.skipReason(test(tags: ["no-android", "no-pipeline-conversion"])) == nil)
        var two = SpecConfig()
        two.numClients = 2
        #expect(SpecRunner.skipReason(test(config: two)) != nil)
        let unsupported = SpecStep(action: .unsupported("applyClientState"), json: "{}")
        #expect(SpecRunner.skipReason(test(steps: [unsupported])) == "unsupported step applyClientState")
    }
}
