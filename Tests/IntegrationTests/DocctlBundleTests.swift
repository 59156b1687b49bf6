import DocModel
import DocTestSupport
import Foundation
import Testing

/// `docctl bundle build` against a real `docctl serve`, and `docctl bundle load` into a fresh
/// cache that never reaches the server; then the cache answers reads (docs/cli.md, docs/bundles.md).
@Suite("docctl bundles end to end", .serialized)
struct DocctlBundleTests {
    @Test func buildFromTheServerThenLoadIntoAFreshCacheOffline() async throws {
        try await DocctlEndToEndTests.withServer { _, docctl in
            for (id, floor) in [("r1", 1), ("r2", 2), ("r3", 3), ("r4", 4)] {
                let set = try await docctl.run(["set", "rooms/\(id)", #"{"name": "Room \#(id)", "floor": \#(floor)}"#, "--wait"]
                                               + docctl.user("alice"))
                #expect(set.status == 0, "\(set)")
            }

            // Build: the three upper rooms, written to a file.
            let file = docctl.home + "/rooms.bundle"
            let build = try await docctl.run(["bundle", "build", "--name", "upper-rooms", "--query", "rooms", "--where", "floor >= 2",
                                              "--order-by", "floor", "--limit", "10", "--out", file, "--json"] + docctl.user("bob"))
            #expect(build.status == 0, "\(build)")
            let summary = try #require(JSONObjectLine(build.lines.first ?? ""), "\(build)")
            #expect(summary.keys == ["id", "name", "documents", "bytes", "readTime", "out"])
            #expect(summary["id"] as? String == "upper-rooms")
            #expect(summary["documents"] as? Int == 3)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
            #expect(summary["bytes"] as? Int == bytes.count)
            let bundle = try DocumentBundle(bytes: bytes)
            #expect(bundle.documents.map(\.key.description) == ["rooms/r2", "rooms/r3", "rooms/r4"])
            #expect(bundle.namedQueries.map(\.name) == ["upper-rooms"])

            // Without --out the bundle goes to stdout, the summary to stderr.
            let piped = try await docctl.run(["bundle", "build", "--name", "upper-rooms", "--query", "rooms", "--where", "floor >= 2",
                                              "--order-by", "floor", "--limit", "10"] + docctl.user("bob"))
            #expect(piped.status == 0, "\(piped)")
            #expect((try? DocumentBundle(bytes: Array(piped.stdout.utf8)))?.documents.count == 3, "\(piped)")
            #expect(piped.stderr.contains("bundle upper-rooms: 3 documents"), "\(piped)")

            // Load into a fresh cache, with the server out of reach.
            let unreachable = try LoopbackPortReservation()
            defer { unreachable.release() }
            let down = docctl.pointing(at: "http://127.0.0.1:\(unreachable.port)")
            let cache = docctl.home + "/fresh-device"
            let load = try await down.run(["bundle", "load", file, "--json", "--cache", cache] + down.user("carol"))
            #expect(load.status == 0, "\(load)")
            let progress = load.lines.compactMap(JSONObjectLine.init)
            #expect(progress.first?.keys == ["taskState", "documentsLoaded", "totalDocuments", "bytesLoaded", "totalBytes"])
            #expect(progress.first?["taskState"] as? String == "running")
            #expect(progress.last?["taskState"] as? String == "success")
            #expect(progress.last?["documentsLoaded"] as? Int == 3)
            #expect(progress.last?["bytesLoaded"] as? Int == bundle.metadata.totalBytes.asInt)

            // The cache answers.
            let get = try await down.run(["get", "rooms/r3", "--source", "cache", "--json", "--cache", cache] + down.user("carol"))
            #expect(get.status == 0, "\(get)")
            let document = try #require(JSONObjectLine(get.lines.first ?? ""), "\(get)")
            #expect(document["fromCache"] as? Bool == true)
            #expect((document["data"] as? [String: Any])?["name"] as? String == "Room r3")
            let query = try await down.run(["query", "rooms", "--order-by", "floor", "--limit", "10", "--json", "--cache", cache]
                                           + down.user("carol"))
            #expect(query.status == 0, "\(query)")
            let answer = try #require(JSONObjectLine(query.lines.first ?? ""), "\(query)")
            #expect(answer["fromCache"] as? Bool == true)
            #expect((answer["documents"] as? [[String: Any]])?.map { $0["path"] as? String } == ["rooms/r2", "rooms/r3", "rooms/r4"],
                    "\(answer)")

            // The same bundle again: skipped, one success line.
            let again = try await down.run(["bundle", "load", file, "--cache", cache] + down.user("carol"))
            #expect(again.status == 0, "\(again)")
            #expect(again.lines.count == 1 && again.lines.first?.hasPrefix("success 3/3 documents") == true, "\(again)")

            // A damaged file: exit 2, the element named, nothing stored.
            let damaged = docctl.home + "/damaged.bundle"
            try Data(bytes.dropLast(5)).write(to: URL(fileURLWithPath: damaged))
            let other = docctl.home + "/other-device"
            let bad = try await down.run(["bundle", "load", damaged, "--cache", other] + down.user("carol"))
            #expect(bad.status == 2, "\(bad)")
            #expect(bad.stderr.contains("truncated") && bad.stderr.contains("bundle element 8 at byte offset"), "\(bad)")
            let nothing = try await down.run(["get", "rooms/r2", "--source", "cache", "--cache", other] + down.user("carol"))
            #expect(nothing.status == 1, "\(nothing)")
        }
    }
}

extension DocctlBundleTests {
    @Test func bundleCommandsHaveHelpWithAnExample() async throws {
        let docctl = try DocctlRunner(server: "http://127.0.0.1:1", secret: "/nonexistent")
        defer { docctl.removeHome() }
        for command in ["bundle", "bundle build", "bundle load"] {
            let help = try await docctl.run(command.split(separator: " ").map(String.init) + ["--help"])
            #expect(help.status == 0, "docctl \(command) --help: \(help)")
            #expect(help.stdout.contains("USAGE: docctl \(command)"), "docctl \(command) --help: \(help)")
            #expect(help.stdout.contains("Example"), "docctl \(command) --help has no example: \(help)")
        }
        let top = try await docctl.run(["--help"])
        #expect(top.stdout.contains("  bundle "), "docctl --help does not list bundle")
        // Without --limit: a usage error, before anything is asked.
        let unbounded = try await docctl.run(["bundle", "build", "--name", "n", "--query", "rooms"] + docctl.user("a"))
        #expect(unbounded.status == 2, "\(unbounded)")
        #expect(unbounded.stderr.contains("--limit is required"), "\(unbounded)")
    }
}

private extension Int64 {
    var asInt: Int { Int(self) }
}
