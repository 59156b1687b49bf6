import DocModel
import Foundation
import Testing
@testable import DocProtocol
import DocTestTraits

/// Every message survives FrameEncoder → FrameDecoder unchanged (and, for the Codable
/// bridge, Foundation's JSONEncoder → JSONDecoder).
@Suite(.cpuBound) struct RoundTripTests {
    static let clientMessages: [ClientMessage] = [
        .hello(.init(token: "eyJhbGciOiJIUzI1NiJ9.e30.sig", clientID: "client-1")),
        .hello(.init(protocolVersion: ProtocolVersion(7), token: "", clientID: "ünïcode-id")),
        .addTarget(.init(targetID: 2, target: Fixtures.queryTarget)),
        .addTarget(.init(targetID: 4, target: Fixtures.groupTarget, resumeToken: [1, 2, 3, 0, 255], expectedCount: 12)),
        .addTarget(.init(targetID: 1, target: Fixtures.documentTarget, resumeToken: [])),
        .addTarget(.init(targetID: 6, target: Fixtures.limitToLastTarget)),
        .removeTarget(.init(targetID: -3)),
        .writeHandshake(.init()),
        .writeHandshake(.init(streamToken: [9, 8, 7])),
        .write(.init(clientID: "client-1", batchID: 7, mutations: Fixtures.mutations, streamToken: [1])),
        .write(.init(clientID: "client-1", batchID: 0, mutations: [])),
    ]

    static let serverMessages: [ServerMessage] = [
        .welcome(.init(connectionID: "c-1")),
        .targetChange(.init(state: .added, targetIDs: [2])),
        .targetChange(.init(state: .current, targetIDs: [2, 4], resumeToken: [1, 0, 0, 0, 0, 0, 0, 0, 42])),
        .targetChange(.init(state: .noChange, targetIDs: [], resumeToken: [1], snapshotVersion: SnapshotVersion(microseconds: 1_714_557_600_000_000))),
        .targetChange(.init(state: .removed, targetIDs: [6], cause: DocError(.invalidArgument, "unbounded", at: "target 6"))),
        .targetChange(.init(state: .reset, targetIDs: [2])),
        .documentChange(.init(document: Fixtures.document, targetIDs: [2], removedTargetIDs: [4, 6])),
        .documentDelete(.init(key: Fixtures.key("a/b"), version: SnapshotVersion(microseconds: 5), removedTargetIDs: [2])),
        .documentRemove(.init(key: Fixtures.key("a/b/c/d"), removedTargetIDs: [2])),
        .documentRemove(.init(key: Fixtures.key("a/b"), version: SnapshotVersion(microseconds: 9), removedTargetIDs: [])),
        .existenceFilter(.init(targetID: 2, count: 12)),
        .existenceFilter(.init(targetID: 2, count: 2, bloomFilter: .init(bitmap: [2, 16, 0, 2], padding: 4, hashCount: 10))),
        .existenceFilter(.init(targetID: 4, count: 0, bloomFilter: .init(bitmap: [], padding: 0, hashCount: 0))),
        .writeHandshake(.init(streamToken: [1, 2])),
        .writeResult(.init(clientID: "c", batchID: 3, commitVersion: SnapshotVersion(microseconds: 77),
                           results: [MutationResult(version: SnapshotVersion(microseconds: 77), transformResults: [.integer(42), .null, .timestamp(Timestamp(microseconds: 77))]),
                                     MutationResult(version: SnapshotVersion(microseconds: 77))],
                           streamToken: [3])),
        .writeError(.init(clientID: "c", batchID: 4, error: DocError(.failedPrecondition, "stale", at: "accounts/a1"))),
        .writeError(.init(clientID: "c", batchID: 5, error: DocError(.unavailable, "try later"), streamToken: [0])),
        .error(.init(DocError(.invalidArgument, "bad frame", at: "frame"), fatal: false)),
        .error(.init(DocError(.unauthenticated, "expired token"), fatal: true)),
    ]

    @Test(arguments: clientMessages)
    func clientFrames(_ message: ClientMessage) throws {
        let bytes = FrameEncoder.encode(message)
        let decoded = try FrameDecoder().decodeClientMessage(bytes)
        #expect(decoded == message)
        // Canonical: encoding again gives the same bytes, and the text form is the same frame.
        #expect(FrameEncoder.encode(decoded) == bytes)
        #expect(Array(FrameEncoder.string(message).utf8) == bytes)
        #expect(try FrameDecoder().decodeClientMessage(FrameEncoder.string(message)) == message)
        #expect(message.type == (try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])?["type"] as? String)
    }

    /// Documents from the server may hold a timestamp outside 0001 … 9999 (as above); a write
    /// holding one is refused when the frame is read, naming the field.
    @Test func aWriteWithATimestampOutOfRangeIsRefused() throws {
        let write = ClientMessage.write(.init(clientID: "client-1", batchID: 7, mutations: [
            .set(Fixtures.key("users/alice"), ObjectValue(["old": Fixtures.everyType["oldTimestamp"]!])),
        ]))
        let refusal = #expect(throws: FrameError.self) { try FrameDecoder().decodeClientMessage(FrameEncoder.encode(write)) }
        #expect(refusal?.error.code == .invalidArgument)
        #expect(refusal?.error.message.contains("outside 0001-01-01") == true, "\(String(describing: refusal))")
        #expect(refusal?.error.location?.contains("field old") == true)
    }

    @Test(arguments: serverMessages)
    func serverFrames(_ message: ServerMessage) throws {
        let bytes = FrameEncoder.encode(message)
        let decoded = try FrameDecoder().decodeServerMessage(bytes)
        #expect(decoded == message)
        #expect(FrameEncoder.encode(decoded) == bytes)
    }

    @Test func documentFieldsKeepEveryTypeExactly() throws {
        let frame = FrameEncoder.encode(.documentChange(.init(document: Fixtures.document, targetIDs: [2])))
        guard case .documentChange(let change) = try FrameDecoder().decodeServerMessage(frame) else {
            Issue.record("not a document change")
            return
        }
        // ObjectValue equality is structural identity: 2.0 stays a double, -0.0 keeps its sign.
        #expect(change.document.data == Fixtures.document.data)
        #expect(change.document.data["integralDouble"].map { $0.isIdentical(to: .double(2.0)) } == true)
        #expect(change.document.data["negativeZero"].map { $0.isIdentical(to: .double(-0.0)) } == true)
        #expect(change.document.data["dollarMap"].map { $0.isIdentical(to: ["$ref": "not a reference"]) } == true)
    }

    @Test func limitToLastIsReadIntoTargetForm() throws {
        // The query form of limit(toLast:): order ascending by points, cursors in query order.
        let frame = """
            {"type":"addTarget","targetId":2,"target":{"path":"scores","orderBy":[{"field":"points"}],"limit":3,"limitType":"last",
             "startAt":{"values":[10],"inclusive":true}}}
            """
        guard case .addTarget(let add) = try FrameDecoder().decodeClientMessage(frame) else {
            Issue.record("not addTarget")
            return
        }
        let expected = try Query(collection: "scores").order(by: Fixtures.field("points")).limit(toLast: 3).start(at: [10]).toTarget()
        #expect(add.target == expected)
        #expect(add.target.orderBys.allSatisfy { $0.isDescending })
        #expect(add.target.endAt != nil && add.target.startAt == nil)
    }

    @Test func missingNameOrderIsAppended() throws {
        let frame = #"{"type":"addTarget","targetId":2,"target":{"path":"c","orderBy":[{"field":"a","direction":"desc"}],"limit":5}}"#
        guard case .addTarget(let add) = try FrameDecoder().decodeClientMessage(frame) else {
            Issue.record("not addTarget")
            return
        }
        #expect(add.target.orderBys.map(\.canonicalID) == ["a desc", "__name__ desc"])
    }

    @Test func framesLookAsDocumented() {
        let frame = FrameEncoder.string(.removeTarget(.init(targetID: 2)))
        #expect(frame == #"{"targetId":2,"type":"removeTarget"}"#)
        let write = FrameEncoder.string(.write(.init(clientID: "c", batchID: 1, mutations: [
            .setMerge(Fixtures.key("counters/c"), ObjectValue(), transforms: [.increment(Fixtures.field("n"), by: 1)]),
        ])))
        #expect(write == #"{"batchId":1,"clientId":"c","mutations":[{"data":{},"kind":"patch","mask":[],"path":"counters/c","transforms":[{"field":"n","op":"increment","operand":1}]}],"type":"write"}"#)
    }

    // MARK: Codable through Foundation

    /// Foundation writes the double -0.0 as "-0": its sign is the one thing lost outside
    /// FrameEncoder / FrameDecoder. Frames are compared with that one difference erased.
    static func withoutNegativeZero(_ frame: String) -> String {
        frame.replacingOccurrences(of: "-0.0", with: "0.0")
    }

    @Test(arguments: clientMessages)
    func clientMessagesAreCodable(_ message: ClientMessage) throws {
        let data = try JSONEncoder().encode(message)
        let decoded = try JSONDecoder().decode(ClientMessage.self, from: data)
        #expect(Self.withoutNegativeZero(FrameEncoder.string(decoded)) == Self.withoutNegativeZero(FrameEncoder.string(message)))
    }

    @Test(arguments: serverMessages)
    func serverMessagesAreCodable(_ message: ServerMessage) throws {
        let data = try JSONEncoder().encode(message)
        let decoded = try JSONDecoder().decode(ServerMessage.self, from: data)
        #expect(Self.withoutNegativeZero(FrameEncoder.string(decoded)) == Self.withoutNegativeZero(FrameEncoder.string(message)))
    }

    @Test func codableKeepsIntegralDoublesApartFromIntegers() throws {
        let message = ServerMessage.writeResult(.init(
            clientID: "c", batchID: 1, commitVersion: SnapshotVersion(microseconds: 1),
            results: [MutationResult(version: SnapshotVersion(microseconds: 1), transformResults: [.double(3.0), .integer(3)])]))
        let decoded = try JSONDecoder().decode(ServerMessage.self, from: try JSONEncoder().encode(message))
        #expect(decoded == message)
        guard case .writeResult(let result) = decoded else { return }
        #expect(result.results[0].transformResults[0].isIdentical(to: .double(3.0)))
        #expect(result.results[0].transformResults[1].isIdentical(to: .integer(3)))
    }

    @Test func nestedMessagesAreCodableOnTheirOwn() throws {
        let hello = ClientMessage.Hello(token: "t", clientID: "c")
        let data = try JSONEncoder().encode(hello)
        #expect(try JSONDecoder().decode(ClientMessage.Hello.self, from: data) == hello)
        // A frame of another type is refused.
        let other = try JSONEncoder().encode(ClientMessage.RemoveTarget(targetID: 1))
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ClientMessage.Hello.self, from: other) }
        // The Codable form is the frame itself.
        let frame = try JSONDecoder().decode(ClientMessage.self, from: Data(FrameEncoder.encode(.hello(hello))))
        #expect(frame == .hello(hello))
    }
}
