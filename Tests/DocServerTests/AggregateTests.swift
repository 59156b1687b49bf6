import DocModel
import DocProtocol
import DocRules
import Testing
@testable import DocServer

/// `aggregate` requests on the server core: values over the store, the rules as for a
/// `list`, refusals that keep the connection.
@Suite struct AggregateTests {
    static func notes(owner: String?) throws -> Target {
        var query = try DocModel.Query(collection: "notes")
        if let owner { query = try query.filter("owner", .equal, .string(owner)) }
        return try query.toTarget()
    }

    static func request(_ id: Int, _ target: Target) throws -> ClientMessage.Aggregate {
        .init(requestID: id, target: target,
              aggregations: [try .count(), try .sum("amount", alias: "total"), try .average("amount", alias: "mean")])
    }

    @Test func anUnboundedQueryIsAggregatedOverTheStoreAndTheRulesDecideAsForAList() async throws {
        let server = try rulesServer()
        try await server.seed(["notes/a1": ["owner": "ann", "amount": 10], "notes/a2": ["owner": "ann", "amount": 2.5],
                               "notes/a3": ["owner": "ann", "amount": "n/a"], "notes/b1": ["owner": "bob", "amount": 100]])
        let ann = try await server.connect(uid: "ann", claims: [:])

        let answer = await server.core.aggregate(try Self.request(1, Self.notes(owner: "ann")), on: ann)
        #expect(ann.outbound.drain() == [answer])
        guard case .aggregateResult(let result) = answer else { Issue.record("\(answer)"); return }
        #expect(result.requestID == 1)
        #expect(result.error == nil)
        #expect(result.result == ["count": .integer(3), "total": .double(12.5), "mean": .double(6.25)])
        #expect(result.readTime != nil)

        // Rules are not filters: a query that could return bob's notes is refused whole.
        let refused = await server.core.aggregate(try Self.request(2, Self.notes(owner: nil)), on: ann)
        guard case .aggregateResult(let denial) = refused else { Issue.record("\(refused)"); return }
        #expect(denial.requestID == 2)
        #expect(denial.error?.code == .permissionDenied)
        #expect(denial.result.isEmpty)
        _ = ann.outbound.drain()

        // A document target is not an aggregation; the connection stays usable after both.
        let document = await server.core.aggregate(
            .init(requestID: 3, target: try DocModel.Query(document: T.key("notes/a1")).toTarget(), aggregations: [try .count()]), on: ann)
        guard case .aggregateResult(let invalid) = document else { Issue.record("\(document)"); return }
        #expect(invalid.error?.code == .invalidArgument)
        let again = await server.core.aggregate(try Self.request(4, Self.notes(owner: "ann")), on: ann)
        guard case .aggregateResult(let ok) = again else { Issue.record("\(again)"); return }
        #expect(ok.result["count"] == .integer(3))
    }

    @Test func theFramesRoundTripAndBadOnesAreRefusedWithTheirPath() throws {
        let request = ClientMessage.aggregate(try Self.request(9, Self.notes(owner: "ann")))
        #expect(try FrameDecoder().decodeClientMessage(FrameEncoder.string(request)) == request)
        let answer = ServerMessage.aggregateResult(.init(requestID: 9, result: ["count": .integer(1), "mean": .null],
                                                         readTime: SnapshotVersion(microseconds: 5)))
        #expect(try FrameDecoder().decodeServerMessage(FrameEncoder.string(answer)) == answer)
        let bad = [
            (#"{"type":"aggregate","requestId":1,"target":{"path":"notes"},"aggregations":[]}"#, "at least one aggregation"),
            (#"{"type":"aggregate","requestId":1,"target":{"path":"notes"},"aggregations":[{"alias":"a","op":"median","field":"x"}]}"#, "unknown aggregation \"median\""),
            (#"{"type":"aggregate","requestId":1,"target":{"path":"notes"},"aggregations":[{"alias":"a","op":"sum"}]}"#, "sum() needs a field"),
            (#"{"type":"aggregate","requestId":1,"target":{"path":"notes"},"aggregations":[{"alias":"a","op":"count"},{"alias":"a","op":"count"}]}"#, "used twice"),
        ]
        for (text, expected) in bad {
            do {
                _ = try FrameDecoder().decodeClientMessage(text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.error.message.contains(expected), "\(error.error.message)")
            }
        }
    }
}
