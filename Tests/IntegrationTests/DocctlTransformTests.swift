import Foundation
import Testing

/// `docctl set`/`update` with field transforms, end to end against a real server: the stored
/// document shows each transform applied; a misspelt transform is refused before anything is
/// written.
@Suite("docctl field transforms", .serialized)
struct DocctlTransformTests {
    @Test func transformsApplyAndUnknownDollarKeysAreRefused() async throws {
        try await DocctlEndToEndTests.withServer { _, docctl in
            let alice = docctl.user("alice")
            let set = try await docctl.run(["set", "rooms/c1", #"{"n": 1, "tags": ["a", "b"], "note": "x"}"#, "--wait"] + alice)
            #expect(set.status == 0, "\(set)")
            let update = try await docctl.run(["update", "rooms/c1", #"""
                {"n": {"$increment": 2}, "at": {"$serverTimestamp": true}, "tags": {"$arrayUnion": ["c", "a"]},
                 "note": {"$delete": true}, "literal": {"$map": {"$increment": 1}}}
                """#, "--wait"] + alice)
            #expect(update.status == 0, "\(update)")
            let remove = try await docctl.run(["set", "rooms/c1", #"{"tags": {"$arrayRemove": ["b"]}}"#, "--merge", "--wait"] + alice)
            #expect(remove.status == 0, "\(remove)")

            let get = try await docctl.run(["get", "rooms/c1", "--json", "--source", "server"] + docctl.user("bob"))
            #expect(get.status == 0, "\(get)")
            let line = try #require(JSONObjectLine(get.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(get)")
            let data = try #require(line["data"] as? [String: Any], "\(get)")
            #expect(data["n"] as? Int == 3)
            #expect(data["tags"] as? [String] == ["a", "c"])
            #expect(data["note"] == nil)
            #expect((data["at"] as? [String: Any])?["$timestamp"] is String, "\(data)")
            #expect((data["literal"] as? [String: Any])?["$map"] as? [String: Int] == ["$increment": 1], "\(data)")

            let misspelt = try await docctl.run(["update", "rooms/c1", #"{"n": {"$incremnt": 1}}"#] + alice)
            #expect(misspelt.status == 2, "\(misspelt)")
            #expect(misspelt.stderr.contains(#"unknown escape "$incremnt""#), "\(misspelt)")
            #expect(misspelt.stderr.contains(#"write {"$map": {"$incremnt": …}}"#), "\(misspelt)")
            let pending = try await docctl.run(["pending", "--json"] + alice)
            #expect(pending.stdout.isEmpty, "a refused write queued nothing: \(pending)")
        }
    }
}
