import DocModel
import Testing
@testable import DocProtocol
import DocTestTraits

/// Every kind of bad frame is refused with `invalidArgument`, a message saying what and a
/// location saying where.
@Suite(.cpuBound) struct ValidationTests {
    /// Decodes a client frame that must fail; returns the error for further checks.
    @discardableResult
    func refuse(
        _ frame: String, _ message: String, at location: String? = nil, decoder: FrameDecoder = FrameDecoder(),
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> FrameError? {
        do {
            let decoded = try decoder.decodeClientMessage(frame)
            Issue.record("accepted \(decoded)", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(error.error.code == .invalidArgument, sourceLocation: sourceLocation)
            #expect(error.error.message.contains(message), "message: \(error.error.message)", sourceLocation: sourceLocation)
            if let location {
                #expect(error.error.location?.contains(location) == true, "location: \(error.error.location ?? "nil")",
                        sourceLocation: sourceLocation)
            }
            return error
        }
    }

    func refuseServer(_ frame: String, _ message: String, at location: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let decoded = try FrameDecoder().decodeServerMessage(frame)
            Issue.record("accepted \(decoded)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.error.code == .invalidArgument, sourceLocation: sourceLocation)
            #expect(error.error.message.contains(message), "message: \(error.error.message)", sourceLocation: sourceLocation)
            if let location {
                #expect(error.error.location?.contains(location) == true, "location: \(error.error.location ?? "nil")",
                        sourceLocation: sourceLocation)
            }
        }
    }

    func addTarget(_ target: String, extra: String = "") -> String {
        #"{"type":"addTarget","targetId":2,"target":"# + target + "\(extra)}"
    }

    func write(_ mutations: String) -> String {
        #"{"type":"write","clientId":"c1","batchId":5,"mutations":"# + mutations + "}"
    }

    // MARK: Frame level

    @Test func size() {
        let decoder = FrameDecoder(limits: FrameLimits(maxFrameBytes: 64))
        let frame = #"{"type":"hello","protocolVersion":1,"clientId":"c","token":""# + String(repeating: "x", count: 100) + #""}"#
        refuse(frame, "the frame is \(frame.utf8.count) bytes; the limit is 64", at: "frame", decoder: decoder)
        // The default allows 4 MiB.
        #expect(FrameLimits.default.maxFrameBytes == 4 * 1024 * 1024)
    }

    @Test func json() {
        refuse(#"{"type":"removeTarget","targetId":2"#, "invalid JSON", at: "frame, line 1")
        refuse(#"{"type":"removeTarget","targetId":2,"targetId":3}"#, "duplicate", at: "frame")
        refuse(#"{"type":"removeTarget","targetId":2} x"#, "after the JSON value", at: "frame")
        refuse(String(repeating: "[", count: 70) + String(repeating: "]", count: 70), "invalid JSON", at: "frame")
        refuse("", "invalid JSON", at: "frame")
        refuse("[1]", "a frame is a JSON object, found an array", at: "frame")
        let invalidUTF8: [UInt8] = Array(#"{"type":"hello","token":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect(throws: FrameError.self) { try FrameDecoder().decodeClientMessage(invalidUTF8) }
    }

    @Test func type() {
        refuse(#"{"targetId":2}"#, #"missing field "type""#, at: "frame")
        refuse(#"{"type":7}"#, "expected a string, found an integer", at: "type")
        refuse(#"{"type":"bogus"}"#, #"unknown client message type "bogus""#, at: "type")
        // A server frame is not a client frame.
        refuse(#"{"type":"welcome","protocolVersion":1,"connectionId":"x"}"#, "unknown client message type")
        refuseServer(#"{"type":"hello"}"#, "unknown server message type")
    }

    @Test func schema() {
        refuse(#"{"type":"removeTarget","targetId":2,"extra":true}"#, #"unknown field "extra""#, at: "removeTarget")
        refuse(#"{"type":"removeTarget"}"#, #"missing field "targetId""#, at: "removeTarget")
        refuse(#"{"type":"removeTarget","targetId":null}"#, #"missing field "targetId""#)
        refuse(#"{"type":"removeTarget","targetId":"2"}"#, "expected an integer, found a string", at: "removeTarget.targetId")
        refuse(#"{"type":"removeTarget","targetId":2.0}"#, "expected an integer, found a double", at: "removeTarget.targetId")
        refuse(#"{"type":"removeTarget","targetId":4294967296}"#, "out of range", at: "removeTarget.targetId")
        refuse(#"{"type":"writeHandshake","streamToken":"not base64!"}"#, "base64", at: "writeHandshake.streamToken")
        refuse(#"{"type":"writeHandshake","streamToken":"QQ="}"#, "base64", at: "writeHandshake.streamToken")
        refuse(#"{"type":"writeHandshake","streamToken":{"$bytes":"AQ=="}}"#, "expected a string, found a bytes")
        let bigToken = String(repeating: "A", count: 2000)
        refuse(#"{"type":"writeHandshake","streamToken":""# + bigToken + #""}"#, "the limit is 1024", at: "writeHandshake.streamToken")
    }

    @Test func hello() {
        refuse(#"{"type":"hello","protocolVersion":1,"token":"t","clientId":""}"#, "the client id is empty", at: "hello.clientId")
        refuse(#"{"type":"hello","protocolVersion":1,"token":"t","clientId":""# + String(repeating: "c", count: 129) + #""}"#,
               "the client id is 129 bytes; the limit is 128")
        refuse(#"{"type":"hello","protocolVersion":1,"token":"t","clientId":"a\nb"}"#, "control characters")
        refuse(#"{"type":"hello","protocolVersion":1,"token":""# + String(repeating: "t", count: 16 * 1024 + 1) + #"","clientId":"c"}"#,
               "the token is 16385 bytes", at: "hello.token")
        refuse(#"{"type":"hello","protocolVersion":-1,"token":"t","clientId":"c"}"#, "out of range", at: "hello.protocolVersion")
        refuse(#"{"type":"hello","token":"t","clientId":"c"}"#, #"missing field "protocolVersion""#)
    }

    // MARK: Targets

    @Test func targetPaths() {
        refuse(addTarget(#"{"path":"a//b","limit":1}"#), "path segments must not be empty", at: "addTarget.target.path")
        refuse(addTarget(#"{"path":"a/__x__","limit":1}"#), "reserved", at: "addTarget.target.path")
        refuse(addTarget(#"{"path":"","limit":1}"#), "needs a collection or document path", at: "addTarget.target.path")
        refuse(addTarget(#"{"path":"","collectionGroup":"a/b","limit":1}"#), "collection group", at: "addTarget.target.collectionGroup")
        refuse(addTarget(#"{"path":"rooms","collectionGroup":"m","limit":1}"#), "is a collection", at: "addTarget.target.path")
        refuse(addTarget(#"{"limit":1}"#), #"missing field "path""#, at: "addTarget.target")
        refuse(addTarget(#"{"path":"c","limit":1,"where":[]}"#), #"unknown field "where""#, at: "addTarget.target")
    }

    @Test func targetFilters() {
        func filter(_ f: String) -> String { addTarget(#"{"path":"c","limit":1,"filters":["# + f + "]}") }
        refuse(filter(#"{"field":"a","op":"~=","value":1}"#), #"unknown filter operator "~=""#, at: "addTarget.target.filters[0].op")
        refuse(filter(#"{"field":"a..b","op":"==","value":1}"#), "empty", at: "addTarget.target.filters[0].field")
        refuse(filter(#"{"field":"a","op":"in","value":[]}"#), "'in' needs a non-empty array", at: "addTarget.target.filters[0].value")
        refuse(filter(#"{"field":"a","op":"not-in","value":5}"#), "'not-in' needs a non-empty array")
        let many = "[" + (0..<31).map(String.init).joined(separator: ",") + "]"
        refuse(filter(#"{"field":"a","op":"array-contains-any","value":"# + many + "}"), "at most 30 values, found 31")
        refuse(filter(#"{"field":"a","op":"<","value":{"$double":"NaN"}}"#), "NaN only supports")
        refuse(filter(#"{"field":"__name__","op":"==","value":"c/d"}"#), "__name__ filters compare with references")
        refuse(filter(#"{"field":"__name__","op":"array-contains","value":{"$ref":"c/d"}}"#), "cannot be used on __name__")
        refuse(filter(#"{"op":"or","filters":[]}"#), "at least one filter", at: "addTarget.target.filters[0].filters")
        refuse(filter(#"{"op":"and","filters":[{"field":"a","op":"==","value":1,"x":1}]}"#), #"unknown field "x""#,
               at: "addTarget.target.filters[0].filters[0]")
        refuse(filter(#"{"field":"a","op":"=="}"#), #"missing field "value""#)
        var deep: Value = 1
        for _ in 0..<21 { deep = ["x": deep] }
        refuse(filter(#"{"field":"a","op":"==","value":"# + deep.jsonString + "}"), "deeper than 20", at: "addTarget.target.filters[0].value")
        let decoder = FrameDecoder(limits: FrameLimits(maxFilters: 2))
        let three = #"{"field":"a","op":"==","value":1},{"field":"b","op":"==","value":1},{"field":"c","op":"==","value":1}"#
        refuse(filter(three), "at most 2 field filters", decoder: decoder)
    }

    @Test func targetOrderLimitCursors() {
        refuse(addTarget(#"{"path":"c","limit":1,"orderBy":[{"field":"a"},{"field":"a","direction":"desc"}]}"#),
               "already ordered by a", at: "addTarget.target.orderBy[1]")
        refuse(addTarget(#"{"path":"c","limit":1,"orderBy":[{"field":"a","direction":"up"}]}"#), #"direction must be "asc" or "desc""#)
        refuse(addTarget(#"{"path":"c","limit":0}"#), "0 is out of range 1…2147483647", at: "addTarget.target.limit")
        refuse(addTarget(#"{"path":"c","limit":1,"limitType":"middle"}"#), #"limitType must be "first" or "last""#)
        refuse(addTarget(#"{"path":"c","limitType":"last"}"#), #"limitType "last" needs a limit"#)
        refuse(addTarget(#"{"path":"c","limit":1,"orderBy":[{"field":"a"}],"startAt":{"values":[1,2,3],"inclusive":true}}"#),
               "a cursor has 3 values but the target has 2 order-bys", at: "addTarget.target.startAt.values")
        refuse(addTarget(#"{"path":"c","limit":1,"startAt":{"values":["d"],"inclusive":true}}"#),
               "a cursor value for __name__ is a reference", at: "addTarget.target.startAt.values[0]")
        refuse(addTarget(#"{"path":"c","limit":1,"endAt":{"values":[]}}"#), "at least one value")
        refuse(addTarget(#"{"path":"c","limit":1,"endAt":{"values":[{"$ref":"c/d"}]}}"#), #"missing field "inclusive""#)
        refuse(addTarget(#"{"path":"c","limit":1}"#, extra: #","resumeToken":"!!!!""#), "base64", at: "addTarget.resumeToken")
        refuse(addTarget(#"{"path":"c","limit":1}"#, extra: #","expectedCount":-1"#), "out of range", at: "addTarget.expectedCount")
    }

    @Test func refusedTargetNamesItsID() {
        let error = refuse(addTarget(#"{"path":"c","limit":0}"#), "out of range")
        #expect(error?.subject == .target(2))
        #expect(error?.frameType == "addTarget")
        let noID = refuse(#"{"type":"addTarget","targetId":"x","target":{"path":"c"}}"#, "expected an integer")
        #expect(noID?.subject == nil)
    }

    // MARK: Writes

    @Test func writeBatch() {
        refuse(#"{"type":"write","batchId":1,"mutations":[]}"#, #"missing field "clientId""#, at: "write")
        refuse(#"{"type":"write","clientId":"c","batchId":-1,"mutations":[]}"#, "out of range", at: "write.batchId")
        let m = #"{"path":"a/b","kind":"delete"}"#
        let decoder = FrameDecoder(limits: FrameLimits(maxWritesPerBatch: 2))
        refuse(write("[" + [m, m, m].joined(separator: ",") + "]"), "a batch has at most 2 writes, this one has 3", at: "write.mutations",
               decoder: decoder)
        #expect(FrameLimits.default.maxWritesPerBatch == 500)
    }

    @Test func writeMutations() {
        refuse(write(#"[{"path":"users","kind":"delete"}]"#), "even number of segments", at: "write.mutations[0].path")
        refuse(write(#"[{"path":"a/b","kind":"upsert"}]"#), #"unknown mutation kind "upsert""#, at: "write.mutations[0].kind")
        refuse(write(#"[{"path":"a/b","kind":"set"}]"#), #"missing field "data""#, at: "write.mutations[0]")
        refuse(write(#"[{"path":"a/b","kind":"set","data":{},"mask":[]}]"#), #"a set mutation has no "mask""#)
        refuse(write(#"[{"path":"a/b","kind":"set","data":[1]}]"#), "expected an object of fields, found an array")
        refuse(write(#"[{"path":"a/b","kind":"patch","data":{}}]"#), #"missing field "mask""#)
        refuse(write(#"[{"path":"a/b","kind":"patch","data":{},"mask":["a."]}]"#), "empty", at: "write.mutations[0].mask[0]")
        refuse(write(#"[{"path":"a/b","kind":"delete","data":{}}]"#), #"a delete mutation has no "data""#)
        refuse(write(#"[{"path":"a/b","kind":"set","data":{"__x__":1}}]"#), "reserved", at: "write.mutations[0]")
        refuse(write(#"[{"path":"a/b","kind":"delete","transforms":[{"field":"n","op":"increment","operand":1}]}]"#),
               "a delete cannot have field transforms")
        refuse(write(#"[{"path":"a/b","kind":"set","data":{},"transforms":[{"field":"n","op":"double"}]}]"#),
               #"unknown transform "double""#, at: "write.mutations[0].transforms[0].op")
        refuse(write(#"[{"path":"a/b","kind":"set","data":{},"transforms":[{"field":"n","op":"increment","operand":"1"}]}]"#),
               "increment needs an integer or double operand, found a string", at: "write.mutations[0].transforms[0].operand")
        refuse(write(#"[{"path":"a/b","kind":"set","data":{"n":1},"transforms":[{"field":"n","op":"serverTimestamp"}]}]"#),
               "transformed and also written")
        refuse(write(#"[{"path":"a/b","kind":"delete","precondition":{}}]"#), #"needs "exists" or "updateTime""#,
               at: "write.mutations[0].precondition")
        refuse(write(#"[{"path":"a/b","kind":"delete","precondition":{"exists":true,"updateTime":1}}]"#), "not both")
        refuse(write(#"[{"path":"a/b","kind":"delete","precondition":{"updateTime":-5}}]"#), "out of range")
    }

    @Test func writeDocumentLimits() {
        let big = String(repeating: "x", count: 1_048_576)
        let error = refuse(write(#"[{"path":"a/b","kind":"set","data":{"s":""# + big + #""}}]"#), "the limit is 1048576 (1 MiB)",
                           at: "write.mutations[0] (a/b)")
        #expect(error?.subject == .batch(clientID: "c1", batchID: 5))
        var deep: Value = 1
        for _ in 0..<20 { deep = ["x": deep] }
        refuse(write(#"[{"path":"a/b","kind":"set","data":{"d":"# + deep.jsonString + "}}]"), "deeper than 20")
        refuse(write(#"[{"path":"a/b","kind":"set","data":{"a":[[1]]}}]"#), "arrays cannot directly contain arrays")
    }

    // MARK: Server frames (as the client reads them)

    @Test func serverFrames() {
        refuseServer(#"{"type":"targetChange","state":"current","targetIds":[2],"cause":{"code":3,"message":"x"}}"#,
                     #"only a "removed" target change has a cause"#)
        refuseServer(#"{"type":"targetChange","state":"sleeping","targetIds":[]}"#, #"unknown target state "sleeping""#)
        refuseServer(#"{"type":"writeError","clientId":"c","batchId":1,"error":{"code":99,"message":"x"}}"#, "out of range",
                     at: "writeError.error.code")
        refuseServer(#"{"type":"writeError","clientId":"c","batchId":1,"error":{"code":5,"name":"aborted","message":"x"}}"#,
                     #"status name "aborted" does not match code 5 (notFound)"#)
        refuseServer(#"{"type":"writeHandshake"}"#, #"missing field "streamToken""#)
        refuseServer(#"{"type":"documentChange","document":{"path":"a","fields":{},"version":1,"createTime":1},"targetIds":[]}"#,
                     "even number of segments", at: "documentChange.document.path")
        refuseServer(#"{"type":"writeResult","clientId":"c","batchId":1,"commitVersion":1,"results":[{"version":1}]}"#,
                     #"unknown field "version""#, at: "writeResult.results[0]")
        // The name may also be given in gRPC spelling.
        #expect(throws: Never.self) {
            try FrameDecoder().decodeServerMessage(#"{"type":"error","error":{"code":16,"name":"UNAUTHENTICATED","message":"x"},"fatal":true}"#)
        }
    }

    @Test func existenceFilterBloomFilters() throws {
        func filter(_ bloom: String) -> String { #"{"type":"existenceFilter","targetId":2,"count":3,"bloomFilter":"# + bloom + "}" }
        refuseServer(filter(#"{"bits":{"bitmap":"AhAA","padding":8},"hashCount":3}"#), "out of range 0…7",
                     at: "existenceFilter.bloomFilter.bits.padding")
        refuseServer(filter(#"{"bits":{"bitmap":"AhAA","padding":-1},"hashCount":3}"#), "out of range 0…7")
        refuseServer(filter(#"{"bits":{"bitmap":"AhAA"},"hashCount":-1}"#), "out of range 0…64",
                     at: "existenceFilter.bloomFilter.hashCount")
        refuseServer(filter(#"{"bits":{"bitmap":"AhAA"},"hashCount":65}"#), "out of range 0…64")
        refuseServer(filter(#"{"bits":{"bitmap":"not base64!"},"hashCount":1}"#), "base64", at: "existenceFilter.bloomFilter.bits.bitmap")
        refuseServer(filter(#"{"bits":{"bitmap":"AhAA","size":3},"hashCount":1}"#), #"unknown field "size""#,
                     at: "existenceFilter.bloomFilter.bits")
        refuseServer(filter(#"{"bitmap":"AhAA","hashCount":1}"#), #"unknown field "bitmap""#, at: "existenceFilter.bloomFilter")
        refuseServer(filter(#"{"hashCount":1}"#), #"missing field "bits""#)
        refuseServer(filter(#""AhAA""#), "expected an object", at: "existenceFilter.bloomFilter")

        // The bitmap is bounded (1 MiB by default).
        let big = Base64.encode([UInt8](repeating: 0xAB, count: 1024 * 1024 + 1))
        refuseServer(filter(#"{"bits":{"bitmap":""# + big + #""},"hashCount":1}"#), "the limit is 1048576")
        let small = FrameDecoder(limits: FrameLimits(maxBloomFilterBytes: 2))
        #expect(throws: FrameError.self) { try small.decodeServerMessage(filter(#"{"bits":{"bitmap":"AhAA"},"hashCount":1}"#)) }

        // Absent padding and hash count are 0 (proto3 JSON); fields that do not fit together
        // are the client's to ignore, not a bad frame.
        let defaults = try FrameDecoder().decodeServerMessage(filter(#"{"bits":{"bitmap":"AhAA"}}"#))
        #expect(defaults == .existenceFilter(.init(targetID: 2, count: 3, bloomFilter: .init(bitmap: [2, 16, 0], padding: 0, hashCount: 0))))
        let empty = try FrameDecoder().decodeServerMessage(filter(#"{"bits":{"bitmap":"","padding":3}}"#))
        #expect(empty == .existenceFilter(.init(targetID: 2, count: 3, bloomFilter: .init(bitmap: [], padding: 3, hashCount: 0))))
        // Frames without a bloom filter stay valid.
        #expect(try FrameDecoder().decodeServerMessage(#"{"type":"existenceFilter","targetId":2,"count":3,"bloomFilter":null}"#)
                == .existenceFilter(.init(targetID: 2, count: 3)))
    }

    @Test func bloomFilterDocumentNames() {
        let key = try! DocumentKey("rooms/r1/messages/m1")
        #expect(ServerMessage.ExistenceFilter.documentName(of: key) == "projects/doccache/databases/(default)/documents/rooms/r1/messages/m1")
        #expect(ServerMessage.ExistenceFilter.documentName(of: key, database: "projects/p/databases/d") == "projects/p/databases/d/documents/rooms/r1/messages/m1")
    }
}
