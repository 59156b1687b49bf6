import DocModel
import Testing
import DocTestTraits

@Suite("JSON write data: values, nested objects and field transforms", .cpuBound)
struct JSONWriteFieldTests {
    @Test("each transform in a field's place, also nested; values and escapes beside them")
    func transforms() throws {
        let fields = try JSONWriteField.fields(json: """
            {"n": {"$increment": 2}, "x": {"$increment": 0.5}, "at": {"$serverTimestamp": true},
             "tags": {"$arrayUnion": ["a", {"$ref": "rooms/r1"}]}, "old": {"$arrayRemove": [1]},
             "gone": {"$delete": true}, "nested": {"count": {"$increment": -1}, "name": "x"},
             "when": {"$timestamp": "2026-11-25T10:00:00Z"}, "empty": {}, "plain": 3}
            """)
        #expect(fields["n"] == .increment(.integer(2)))
        #expect(fields["x"] == .increment(.double(0.5)))
        #expect(fields["at"] == .serverTimestamp)
        #expect(fields["tags"] == .arrayUnion([.string("a"), .reference(try DocumentKey("rooms/r1"))]))
        #expect(fields["old"] == .arrayRemove([.integer(1)]))
        #expect(fields["gone"] == .delete)
        #expect(fields["nested"] == .map(["count": .increment(.integer(-1)), "name": .value(.string("x"))]))
        #expect(fields["when"] == .value(.timestamp(try Timestamp(rfc3339: "2026-11-25T10:00:00Z"))))
        #expect(fields["empty"] == .value(.map([:])))
        #expect(fields["plain"] == .value(.integer(3)))
    }

    @Test("$map stores a map whose key starts with $ literally, and its values are values, never transforms")
    func literalMaps() throws {
        let fields = try JSONWriteField.fields(json: #"{"n": {"$map": {"$increment": 1}}}"#)
        #expect(fields["n"] == .value(.map(["$increment": .integer(1)])))
        // A map with several members is a map whatever its keys look like.
        let two = try JSONWriteField.fields(json: #"{"n": {"$increment": 1, "b": 2}}"#)
        #expect(two["n"] == .map(["$increment": .value(.integer(1)), "b": .value(.integer(2))]))
    }

    @Test("unknown $ keys, misplaced transforms and wrong arguments are refused, saying where and how to write it literally")
    func refusals() {
        let cases: [(String, String)] = [
            (#"{"n": {"$incremnt": 1}}"#, #"unknown escape "$incremnt"; the escapes are"#),
            (#"{"n": {"$incremnt": 1}}"#, #"To store a map with the key "$incremnt" literally, write {"$map": {"$incremnt": …}}"#),
            (#"{"n": {"$incremnt": 1}}"#, "the field transforms are $arrayRemove, $arrayUnion, $delete, $increment, $serverTimestamp"),
            (#"{"a": [{"$increment": 1}]}"#, "$increment is a field transform, which may stand only as a field's value"),
            (#"{"a": {"$map": {"k": {"$delete": true}}}}"#, "$delete is a field transform"),
            (#"{"a": [{"$whatever": 1}]}"#, #"unknown escape "$whatever""#),
            (#"{"n": {"$increment": "1"}}"#, #"$increment takes a number, found the string "1""#),
            (#"{"t": {"$serverTimestamp": 1}}"#, "$serverTimestamp takes true, found a number"),
            (#"{"t": {"$delete": false}}"#, "$delete takes true, found a boolean"),
            (#"{"t": {"$arrayUnion": 3}}"#, "$arrayUnion takes an array of values, found a number"),
            (#"[1]"#, "write data must be a JSON object"),
        ]
        for (json, expected) in cases {
            do {
                _ = try JSONWriteField.fields(json: json)
                Issue.record("accepted \(json)")
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains(expected), "\(json): \(error.message)")
                #expect(error.location?.hasPrefix("line 1, column") == true, "\(json): \(String(describing: error.location))")
            }
        }
    }

    @Test("stored data keeps reading an unknown $ key as a plain map (Value(json:) is not strict)")
    func storedDataStaysLenient() throws {
        #expect(try Value(json: #"{"$incremnt": 1}"#) == .map(["$incremnt": .integer(1)]))
    }
}
