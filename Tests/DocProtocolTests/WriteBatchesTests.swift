import DocModel
import Testing
@testable import DocProtocol
import DocTestTraits

/// `writeBatches` (several batches in one client frame) and its answer `writeResults`: round
/// trips, and the validation that refuses a bad frame as a whole.
@Suite(.cpuBound) struct WriteBatchesTests {
    static let set = #"{"path":"items/a","kind":"set","data":{"n":1}}"#

    static func frame(_ batches: String, clientID: String = "c1", extra: String = "") -> String {
        #"{"type":"writeBatches","clientId":""# + clientID + #"","batches":"# + batches + extra + "}"
    }

    /// ``ValidationTests/refuse(_:_:at:decoder:sourceLocation:)``, with the exact location and
    /// the frame type.
    @discardableResult
    func refuse(_ frame: String, _ message: String, at location: String? = nil,
                sourceLocation: SourceLocation = #_sourceLocation) -> FrameError? {
        guard let error = ValidationTests().refuse(frame, message, sourceLocation: sourceLocation) else { return nil }
        if let location {
            #expect(error.error.location == location, "location: \(error.error.location ?? "nil")", sourceLocation: sourceLocation)
        }
        #expect(error.frameType == "writeBatches", sourceLocation: sourceLocation)
        return error
    }

    @Test func roundTrips() throws {
        let message = ClientMessage.writeBatches(.init(clientID: "c1", batches: [
            .init(batchID: 7, mutations: [.set(try DocumentKey("items/a"), ObjectValue(["n": 1]))]),
            .init(batchID: 9, mutations: [.delete(try DocumentKey("items/b")), .verify(try DocumentKey("items/c"), .exists(true))]),
        ], streamToken: [1, 2, 3]))
        #expect(try FrameDecoder().decodeClientMessage(FrameEncoder.encode(message)) == message)

        let answer = ServerMessage.writeResults(.init(clientID: "c1", answers: [
            .committed(batchID: 7, commitVersion: SnapshotVersion(microseconds: 70),
                       results: [MutationResult(version: SnapshotVersion(microseconds: 70), transformResults: [.integer(4)])]),
            .failed(batchID: 9, error: DocError(.notFound, "no document to update: items/b", at: "write 0: items/b")),
        ], streamToken: [4]))
        #expect(try FrameDecoder().decodeServerMessage(FrameEncoder.encode(answer)) == answer)
    }

    @Test func aBatchWithAnInvalidMutationRefusesTheFrameNamingThatBatch() throws {
        let bad = #"{"path":"items/b","kind":"set","data":{"__x__":1}}"#
        let error = try #require(refuse(
            Self.frame(#"[{"batchId":1,"mutations":["# + Self.set + #"]},{"batchId":2,"mutations":["# + bad + "]}]"),
            "field name \"__x__\" is reserved"))
        #expect(error.error.location?.hasPrefix("writeBatches.batches[1].mutations[0]") == true, "\(error.error)")
        // The server answers for the batch at fault (the one before it gets no answer).
        #expect(error.subject == .batch(clientID: "c1", batchID: 2))
    }

    @Test func theFrameAroundTheBatchesIsCheckedToo() throws {
        let one = #"{"batchId":1,"mutations":["# + Self.set + "]}"
        let two = #"{"batchId":2,"mutations":["# + Self.set + "]}"
        #expect(refuse(Self.frame("[]"), "holds 1…500 batches, this one has 0", at: "writeBatches.batches")?.subject == nil)
        #expect(refuse(Self.frame("[" + two + "," + one + "]"), "batch ids must increase within a frame: 1 follows 2",
                       at: "writeBatches.batches[1].batchId")?.subject == nil)
        #expect(refuse(Self.frame("[" + one + "," + one + "]"), "batch ids must increase")?.subject == nil)
        #expect(refuse(Self.frame("[" + one + "]", extra: #","extra":1"#), "unknown field \"extra\"")?.subject == nil)
        #expect(refuse(Self.frame(#"[{"batchId":1,"mutations":[],"more":1}]"#), "unknown field \"more\"")?
            .subject == .batch(clientID: "c1", batchID: 1))
        #expect(refuse(Self.frame(#"[{"batchId":-1,"mutations":[]}]"#), "-1 is out of range", at: "writeBatches.batches[0].batchId")?.subject == nil)
        #expect(refuse(Self.frame(#"[{"mutations":[]}]"#), "missing field \"batchId\"")?.subject == nil)
        #expect(refuse(Self.frame("[" + one + "]", clientID: ""), "the client id is empty", at: "writeBatches.clientId")?.subject == nil)
        #expect(refuse(Self.frame(#"{"batchId":1}"#), "expected an array")?.subject == nil)

        // More batches than the limit.
        var limits = FrameLimits()
        limits.maxBatchesPerFrame = 2
        let three = Self.frame("[" + one + "," + two + #",{"batchId":3,"mutations":[]}]"#)
        #expect(throws: FrameError.self) { try FrameDecoder(limits: limits).decodeClientMessage(three) }
        #expect(try FrameDecoder().decodeClientMessage(three).type == "writeBatches")
    }

    @Test func answersAreCheckedByTheClient() {
        func refuseServer(_ frame: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
            do {
                let decoded = try FrameDecoder().decodeServerMessage(frame)
                Issue.record("accepted \(decoded)", sourceLocation: sourceLocation)
            } catch {
                #expect(error.error.code == .invalidArgument, sourceLocation: sourceLocation)
                #expect(error.error.message.contains(message), "message: \(error.error.message)", sourceLocation: sourceLocation)
            }
        }
        refuseServer(#"{"type":"writeResults","clientId":"c1","batches":[]}"#, "holds 1…500 answers")
        refuseServer(#"{"type":"writeResults","clientId":"c1","batches":[{"batchId":1,"commitVersion":5,"results":[],"#
            + #""error":{"code":5,"message":"x"}}]}"#, "either \"error\" or \"commitVersion\"")
        refuseServer(#"{"type":"writeResults","clientId":"c1","batches":[{"batchId":1,"results":[]}]}"#,
                     "missing field \"commitVersion\"")
    }
}
