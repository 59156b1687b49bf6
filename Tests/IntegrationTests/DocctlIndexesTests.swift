import DocModel
import DocTestSupport
import Foundation
import Testing

/// `docctl serve --indexes FILE`: a configuration it cannot use stops the start with a clear
/// error; a good one serves queries (built on the documents it finds, on a restart).
@Suite("docctl serve --indexes", .serialized)
struct DocctlIndexesTests {
    static func file(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("indexes-\(UUID().uuidString).json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func unusableConfigurationsStopTheStart() async throws {
        let docctl = try DocctlRunner(server: "", secret: "")
        defer { docctl.removeHome() }
        let groupScope = try Self.file(#"{"indexes": [{"collectionGroup": "rooms", "queryScope": "COLLECTION_GROUP", "fields": []}]}"#)
        defer { try? FileManager.default.removeItem(atPath: groupScope) }
        let refused = try await docctl.run(["serve", "--port", "0", "--data", docctl.home + "/data", "--indexes", groupScope])
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("the index configuration \(groupScope): indexes[0].queryScope COLLECTION_GROUP is not supported"),
                "\(refused)")
        let missing = try await docctl.run(["serve", "--port", "0", "--data", docctl.home + "/data", "--indexes", docctl.home + "/nope.json"])
        #expect(missing.status == 1, "\(missing)")
        #expect(missing.stderr.contains("cannot read the index configuration"), "\(missing)")
    }

    @Test func declaredIndexesServeQueriesAcrossARestart() async throws {
        let indexes = try Self.file("""
            {"indexes": [{"collectionGroup": "rooms", "queryScope": "COLLECTION",
                          "fields": [{"fieldPath": "floor", "order": "ASCENDING"}, {"fieldPath": "name", "order": "DESCENDING"}]}]}
            """)
        defer { try? FileManager.default.removeItem(atPath: indexes) }
        // Documents written before the index is declared: the restart builds its rows.
        let server = try ServerProcess(arguments: [])
        defer { server.kill(); server.removeData() }
        try await server.start()
        let docctl = try DocctlRunner(server: server.url, secret: server.secretFile)
        defer { docctl.removeHome() }
        for (i, (floor, name)) in [(2, "Attic"), (1, "Hall"), (2, "Study"), (2, "Kitchen"), (3, "Roof")].enumerated() {
            let set = try await docctl.run(["set", "rooms/r\(i)", #"{"floor": \#(floor), "name": "\#(name)"}"#, "--wait"] + docctl.user("alice"))
            #expect(set.status == 0, "\(set)")
        }
        server.kill()
        server.extraArguments = ["--indexes", indexes]
        try await server.start()
        let query = try await docctl.run(["query", "rooms", "--where", "floor == 2", "--order-by", "name:desc", "--limit", "2", "--json"]
                                         + docctl.user("bob"))
        #expect(query.status == 0, "\(query)")
        let answer = try #require(JSONObjectLine(query.lines.first ?? ""), "\(query)")
        #expect(answer["fromCache"] as? Bool == false, "\(answer)")
        #expect((answer["documents"] as? [[String: Any]])?.map { $0["path"] as? String } == ["rooms/r2", "rooms/r3"], "\(answer)")
    }
}
