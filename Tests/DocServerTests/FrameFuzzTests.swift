import DocModel
import DocProtocol
import DocRules
import DocTestSupport
import Foundation
@testable import DocServer
import Testing

/// Frames a client could send, mutated at random (``JSONMutator``: a number replaced by an
/// extreme one, a string by an odd one, a value by a typed `$…` form out of range, a key
/// dropped), fed to a
/// server core whose rules call functions on whatever the data holds, with the example request
/// handlers registered. The server must answer each one and stay usable: a trap anywhere on
/// the way (decoding, validation, rules, commit, fan-out, request processing, maintenance)
/// ends the test process. Seeded, so a failing sequence can be replayed.
@Suite("Mutated client frames never crash the server")
struct FrameFuzzTests {
    /// Rules that read every field a frame can carry into a rules function.
    static let rules = """
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /{document=**} {
              allow get: if true;
              allow list: if string(resource.data.get('t', 0)) != 'x' && resource.data.get('n', 0) != 7;
              allow create, update: if string(request.resource.data.get('t', 0)) != 'x'
                && (!(request.resource.data.get('t', 0) is timestamp) || request.resource.data.t.toMillis() != 1)
                && (!(request.resource.data.get('n', 0) is int) || request.resource.data.n + 1 != 0)
                && request.resource.data.keys().size() >= 0;
              allow delete: if true;
            }
          }
        }
        """

    @Test(arguments: [UInt64(0xF022_0001), 0xF022_0002, 0xF022_0003])
    func mutatedFramesAreAnsweredAndTheServerStaysUsable(seed: UInt64) async throws {
        var configuration = ServerConfiguration(rules: try RuleSet.parse(source: Self.rules, file: "fuzz.rules"))
        configuration.explainDenials = true
        let server = TestServer(configuration: configuration)
        server.core.requests.registerExamples()
        var mutator = JSONMutator(seed: seed)
        let bases = try Self.baseFrames()
        var connection = try await server.connect(client: "fuzz")
        var answers: [String: Int] = [:]
        for i in 0..<2_000 {
            var tree = Self.renumbered(bases[mutator.int(in: 0..<bases.count)], from: 10 + 3 * i, client: connection.clientID)
            for _ in 0..<(mutator.int(in: 0..<4) == 0 ? 2 : 1) { tree = mutator.mutate(tree) }
            let data = try JSONSerialization.data(withJSONObject: tree, options: [.fragmentsAllowed])
            await server.core.receive(text: String(decoding: data, as: UTF8.self), on: connection)
            var halted = false
            for answer in connection.outbound.drain() {
                answers[answer.type, default: 0] += 1
                if case .writeError(let e) = answer, e.error.isBatchIDConflict { halted = true }
            }
            if i % 100 == 99 {
                // Time passes: the collector and pruning see what was stored.
                server.clock.advance(by: 3 * 86_400_000_000)
                _ = await server.core.runMaintenance()
            }
            if connection.outbound.isFinished || halted {
                // As a client does after an answer about its batch ids: a new client id.
                connection = try await server.connect(client: "fuzz-\(i)")
            }
        }
        // The mutated frames reached every layer: some committed, some refused there, listens
        // and aggregations answered.
        #expect(answers["writeResult", default: 0] + answers["writeResults", default: 0] > 0, "\(answers)")
        #expect(answers["writeError", default: 0] > 0 && answers["targetChange", default: 0] > 0, "\(answers)")
        #expect(answers["aggregateResult", default: 0] > 0, "\(answers)")
        // Still usable: a fresh connection writes and reads.
        let fresh = try await server.connect(client: "after")
        let answer = await server.write(fresh, batch: 1, [T.set("notes/after", ["n": 1])])
        #expect(answer.writeResult?.batchID == 1, "\(answer)")
        let delivered = await server.core.watch(.init(targetID: 2, target: T.target(try Query(document: T.key("notes/after")))), on: fresh)
        #expect((delivered + fresh.outbound.drain()).contains { if case .targetChange(let c) = $0 { c.state == .current } else { false } })
    }

    /// One frame of each kind the client sends, as JSON trees.
    static func baseFrames() throws -> [Any] {
        let every: [String: Value] = [
            "n": 5, "d": 1.5, "s": "text", "b": true, "z": .null, "bytes": .bytes([1, 2]),
            "t": .timestamp(try Timestamp(seconds: 1_714_557_600, nanos: 5)), "geo": .geoPoint(try GeoPoint(latitude: 1, longitude: 2)),
            "ref": .reference(try DocumentKey("notes/a")), "list": [1, "two", ["m": 3]], "map": ["a": ["b": 1]],
        ]
        let query = try Query(collection: "notes")
            .filter(.or([.where(FieldPath("n"), .greaterThanOrEqual, 3), .where(FieldPath("tags"), .arrayContains, "x")]))
            .filter(.where(FieldPath("s"), .in, ["a", "b"]))
            .order(by: FieldPath("n"), descending: true)
            .start(after: [.integer(2)])
            .limit(to: 20)
        let messages: [ClientMessage] = [
            .write(.init(clientID: "fuzz", batchID: 1, mutations: [
                .set(try DocumentKey("notes/a"), ObjectValue(every), transforms: [.serverTimestamp(try FieldPath("at"))]),
                .update(try DocumentKey("notes/b"), fields: [try FieldPath("n"): 2], deleting: [try FieldPath("s")],
                        transforms: [.increment(try FieldPath("count"), by: 1), .arrayUnion(try FieldPath("tags"), ["x"])]),
                .delete(try DocumentKey("notes/c"), precondition: .updateTime(SnapshotVersion(microseconds: 99))),
            ])),
            .writeBatches(.init(clientID: "fuzz", batches: [
                .init(batchID: 2, mutations: [T.set("accounts/a", ["balance": 1_000]), T.set("accounts/b", ["balance": 0])]),
                .init(batchID: 3, mutations: [T.set("invoices/i1", ["lines": [["net": 1_000], ["net": 2_345]], "taxRateBasisPoints": 0])]),
            ])),
            .write(.init(clientID: "fuzz", batchID: 4, mutations: [T.set("requests/r1", [
                "type": "transfer", "status": "pending", "createdBy": "u1", "base": [:],
                "params": ["from": "accounts/a", "to": "accounts/b", "amount": 300],
            ])])),
            .write(.init(clientID: "fuzz", batchID: 5, mutations: [T.set("requests/r2", [
                "type": "setTaxRate", "status": "pending", "createdBy": "u1", "base": [:],
                "params": ["invoice": "invoices/i1", "taxRateBasisPoints": 1_900],
            ])])),
            .addTarget(.init(targetID: 2, target: try query.toTarget(), resumeToken: WatchToken(incarnation: 1, version: SnapshotVersion(microseconds: 5)).bytes,
                             expectedCount: 3)),
            .addTarget(.init(targetID: 4, target: try Query(document: try DocumentKey("notes/a")).toTarget())),
            .addTarget(.init(targetID: 6, target: try Query(collection: "notes").order(by: FieldPath("n")).limit(toLast: 2).toTarget())),
            .addTarget(.init(targetID: 8, target: try Query(collection: "notes")
                .filter(.where(FieldPath("t"), .equal, .timestamp(try Timestamp(seconds: 1_714_557_600)))).limit(to: 5).toTarget())),
            .aggregate(.init(requestID: 1, target: try Query(collection: "notes").filter(.where(FieldPath("n"), .lessThan, 10)).toTarget(),
                             aggregations: [try .count(alias: "c"), try .sum("n", alias: "s"), try .average("d", alias: "a")])),
            .removeTarget(.init(targetID: 2)),
            .writeHandshake(.init(streamToken: WatchToken(incarnation: 1, version: SnapshotVersion(microseconds: 5)).bytes)),
        ]
        return try messages.map { try JSONSerialization.jsonObject(with: Data(FrameEncoder.encode($0)), options: [.fragmentsAllowed]) }
    }

    /// A frame with fresh batch ids from `first` on (a batch id sent again with other
    /// mutations is a collision, after which the connection takes no more writes), the
    /// connection's client id, and fresh request ids.
    static func renumbered(_ tree: Any, from first: Int, client: String) -> Any {
        guard var object = tree as? [String: Any] else { return tree }
        if object["clientId"] != nil { object["clientId"] = client }
        // A request id is processed once: each frame's requests get new ones.
        if var mutations = object["mutations"] as? [[String: Any]] {
            for i in mutations.indices where (mutations[i]["path"] as? String)?.hasPrefix("requests/") == true {
                mutations[i]["path"] = "requests/r\(first)-\(i)"
            }
            object["mutations"] = mutations
        }
        if object["batchId"] != nil { object["batchId"] = first }
        if var batches = object["batches"] as? [[String: Any]] {
            for i in batches.indices { batches[i]["batchId"] = first + i }
            object["batches"] = batches
        }
        return object
    }
}
