import DocModel
import DocTestSupport
import Foundation
import Testing

/// docs/cli.md, `docctl failed` (issue 17, item 5): the writes a real server rejected are
/// listed, shown, discarded and retried by the real `docctl` binary, each command its own
/// process on the same cache.
@Suite("docctl failed", .serialized)
struct DocctlFailedTests {
    /// `docctl update` of a document that does not exist: the server rejects it (`notFound`);
    /// returns the rejected batch's id.
    static func rejectedUpdate(_ docctl: DocctlRunner, _ user: [String], path: String, data: String) async throws -> Int {
        let update = try await docctl.run(["update", path, data, "--wait", "--json"] + user)
        #expect(update.status == 1, "\(update)")
        let line = try #require(JSONObjectLine(update.lines.first ?? ""), "\(update)")
        #expect(line["status"] as? String == "rejected", "\(update)")
        return try #require(line["batchId"] as? Int, "\(update)")
    }

    @Test func failedWritesAreListedShownDiscardedAndRetried() async throws {
        try await DocctlEndToEndTests.withServer { _, docctl in
            let dora = docctl.user("dora") + ["--cache", docctl.home + "/dora"]

            // A rejected write is kept: `failed --json` prints it, one line, the documented keys.
            let first = try await Self.rejectedUpdate(docctl, dora, path: "notes/n1", data: #"{"text": "mine"}"#)
            // Read from the server, so the conflict knows there is no document there (the
            // store's own read after the rejection may not finish before `update` exits).
            #expect(try await docctl.run(["get", "notes/n1", "--source", "server"] + dora).status == 1, "exit 1: no such document")
            let list = try await docctl.run(["failed", "--json"] + dora)
            #expect(list.status == 0, "\(list)")
            #expect(list.lines.count == 1, "\(list)")
            let failed = try #require(JSONObjectLine(list.lines.first ?? ""), "\(list)")
            #expect(failed.keys == ["id", "createdAt", "error", "writes", "conflicts"], "\(failed)")
            #expect(failed["id"] as? Int == first, "\(failed)")
            let createdAt = try #require(failed["createdAt"] as? String, "\(failed)")
            #expect((try? Timestamp(rfc3339: createdAt)) != nil, "\(failed)")
            let error = try #require(failed["error"] as? [String: Any], "\(failed)")
            #expect(Set(error.keys) == ["code", "message"], "\(failed)")
            #expect(error["code"] as? String == "notFound", "\(failed)")
            #expect(failed.text.contains(#","writes":[{"op":"update","path":"notes/n1","data":{"text":"mine"}}],"conflicts":[{"path":"notes/n1","mine":"#),
                    "\(failed)")
            let conflicts = try #require(failed["conflicts"] as? [[String: Any]], "\(failed)")
            #expect(conflicts.count == 1, "\(failed)")
            #expect(Set(conflicts.first?.keys.map { $0 } ?? []) == ["path", "mine", "theirs", "theirsVersion", "serverVersionKnown", "changedFields"],
                    "\(failed)")
            #expect(conflicts.first?["theirs"] is NSNull, "no document on the server: \(failed)")
            #expect(conflicts.first?["serverVersionKnown"] as? Bool == true, "\(failed)")

            // The human list: one line per failed write, then the count.
            let human = try await docctl.run(["failed"] + dora)
            #expect(human.status == 0, "\(human)")
            #expect(human.lines.count == 2, "\(human)")
            #expect(human.lines.first?.hasPrefix("failed write \(first)  rejected ") == true, "\(human)")
            #expect(human.lines.first?.contains("  notFound: ") == true, "\(human)")
            #expect(human.lines.first?.hasSuffix("  update notes/n1") == true, "\(human)")
            #expect(human.lines.last == "1 failed write", "\(human)")

            // `show`: the same object with --json; the changed field side by side for people.
            let showJSON = try await docctl.run(["failed", "show", String(first), "--json"] + dora)
            #expect(showJSON.status == 0, "\(showJSON)")
            #expect(showJSON.lines == [failed.text], "\(showJSON)")
            let show = try await docctl.run(["failed", "show", String(first)] + dora)
            #expect(show.status == 0, "\(show)")
            #expect(show.lines.first == human.lines.first, "\(show)")
            #expect(show.lines.dropFirst().first?.hasPrefix("notes/n1  (") == true, "\(show)")
            #expect(show.lines.contains(#"  text  mine "mine"  theirs —"#), "\(show)")

            // The status counts it.
            let status = try await docctl.run(["status", "--json"] + dora)
            #expect(status.status == 0, "\(status)")
            #expect(JSONObjectLine(status.lines.first ?? "")?["failedWrites"] as? Int == 1, "\(status)")

            // `discard` drops it; a second discard is the library's notFound: exit 1.
            let discard = try await docctl.run(["failed", "discard", String(first)] + dora)
            #expect(discard.status == 0, "\(discard)")
            #expect(discard.lines == ["failed write \(first) discarded"], "\(discard)")
            let again = try await docctl.run(["failed", "discard", String(first), "--json"] + dora)
            #expect(again.status == 1, "\(again)")
            #expect(JSONObjectLine(again.lines.first ?? "")?["code"] as? String == "notFound", "\(again)")
            #expect(again.stderr.hasPrefix("error: ") && again.stderr.contains("[notFound]"), "\(again)")
            let empty = try await docctl.run(["failed", "--json"] + dora)
            #expect(empty.status == 0 && empty.lines.isEmpty, "\(empty)")

            // Another rejected write; another user creates the document; the retry commits.
            let second = try await Self.rejectedUpdate(docctl, dora, path: "notes/n2", data: #"{"text": "mine"}"#)
            let create = try await docctl.run(["set", "notes/n2", #"{"text": "theirs", "by": "erik"}"#, "--wait"] + docctl.user("erik"))
            #expect(create.status == 0, "\(create)")
            let retry = try await docctl.run(["failed", "retry", String(second), "--wait"] + dora)
            #expect(retry.status == 0, "\(retry)")
            #expect(retry.lines.count == 2, "\(retry)")
            let batch = try #require(retry.lines.first.flatMap { line -> Int? in
                let prefix = "failed write \(second) retried as batch "
                return line.hasPrefix(prefix) ? Int(line.dropFirst(prefix.count)) : nil
            }, "\(retry)")
            #expect(batch > second, "\(retry)")
            #expect(retry.lines.last?.range(of: #"^notes/n2: committed \(version [0-9]+\)$"#, options: .regularExpression) != nil,
                    "\(retry)")
            let none = try await docctl.run(["failed"] + dora)
            #expect(none.status == 0 && none.lines == ["0 failed writes"], "\(none)")
            let retried = try await docctl.run(["failed", "retry", String(second)] + dora)
            #expect(retried.status == 1, "\(retried)")
            #expect(retried.stderr.contains("[notFound]"), "\(retried)")
            let get = try await docctl.run(["get", "notes/n2", "--source", "server", "--json"] + docctl.user("erik"))
            #expect(get.status == 0, "\(get)")
            let data = JSONObjectLine(get.lines.first ?? "")?["data"] as? [String: Any]
            #expect(data?["text"] as? String == "mine" && data?["by"] as? String == "erik", "\(get)")
        }
    }

    /// `failed resolve`: keep theirs writes nothing; keep mine and merged commit on the server
    /// version the device knows, and a change made since is caught, not overwritten.
    @Test func failedWritesAreResolved() async throws {
        try await DocctlEndToEndTests.withServer { _, docctl in
            let dora = docctl.user("dora") + ["--cache", docctl.home + "/dora"]
            let erik = docctl.user("erik")

            // Theirs: nothing is written, the failed write is gone.
            let first = try await DocctlFailedTests.rejectedUpdate(docctl, dora, path: "notes/r1", data: #"{"text": "mine"}"#)
            let usage = try await docctl.run(["failed", "resolve", String(first), "--keep", "merged"] + dora)
            #expect(usage.status != 0 && usage.stderr.contains("needs the merged data"), "\(usage)")
            let theirs = try await docctl.run(["failed", "resolve", String(first), "--keep", "theirs"] + dora)
            #expect(theirs.status == 0 && theirs.lines == ["failed write \(first) resolved: the server's version kept"], "\(theirs)")

            // Merged: Erik created the document; Dora reads it (so its version is known here),
            // then merges.
            let second = try await DocctlFailedTests.rejectedUpdate(docctl, dora, path: "notes/r2", data: #"{"text": "mine"}"#)
            #expect(try await docctl.run(["set", "notes/r2", #"{"text": "theirs", "by": "erik"}"#, "--wait"] + erik).status == 0)
            #expect(try await docctl.run(["get", "notes/r2", "--source", "server"] + dora).status == 0)
            let merged = try await docctl.run(["failed", "resolve", String(second), "--keep", "merged",
                                               #"{"text": "both", "by": "erik"}"#, "--wait"] + dora)
            #expect(merged.status == 0, "\(merged)")
            #expect(merged.lines.first?.hasPrefix("failed write \(second) resolved as batch ") == true, "\(merged)")
            #expect(merged.lines.last?.range(of: #"^notes/r2: committed \(version [0-9]+\)$"#, options: .regularExpression) != nil, "\(merged)")

            // Mine, after a change Dora has not seen: rejected again, the server keeps Erik's.
            let third = try await DocctlFailedTests.rejectedUpdate(docctl, dora, path: "notes/r3", data: #"{"text": "mine"}"#)
            #expect(try await docctl.run(["set", "notes/r3", #"{"text": "v1"}"#, "--wait"] + erik).status == 0)
            #expect(try await docctl.run(["get", "notes/r3", "--source", "server"] + dora).status == 0)
            #expect(try await docctl.run(["set", "notes/r3", #"{"text": "v2"}"#, "--wait"] + erik).status == 0)
            let mine = try await docctl.run(["failed", "resolve", String(third), "--keep", "mine", "--wait"] + dora)
            #expect(mine.status == 1, "\(mine)")
            #expect(mine.lines.last?.contains("rejected") == true, "\(mine)")
            let server = try await docctl.run(["get", "notes/r3", "--source", "server", "--json"] + erik)
            #expect((JSONObjectLine(server.lines.first ?? "")?["data"] as? [String: Any])?["text"] as? String == "v2", "\(server)")
            let left = try await docctl.run(["failed", "--json"] + dora)
            #expect(left.lines.count == 1, "the caught resolution is a failed write again: \(left)")
        }
    }
}
