import Crypto
import DocModel
import DocTestSupport
import Foundation
import Testing

/// docs/cli.md, `docctl attach`, `docctl attachments`, `docctl attachment get` and the
/// attachment lines of `docctl listen` (issue 18, item 6): the built `docctl` run as separate
/// processes against a real `docctl serve` child on loopback, each command with the documented
/// output, exit status and effect on the local cache and on the server's blob store.
@Suite("docctl attachments", .serialized, .timeLimit(.minutes(5)))
struct DocctlAttachmentTests {
    /// The keys of `attach --json`, in order.
    static let summaryKeys = ["id", "state", "size", "sha256", "contentType"]
    /// The keys of `attachments --json`, in order.
    static let detailKeys = summaryKeys + ["sent", "createdAt", "error"]

    static func sha256(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// Writes `bytes` to `path`.
    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// The only stdout line of `result`, parsed; records an issue when there is not exactly one.
    static func onlyJSONLine(_ result: DocctlRunner.Result, _ what: String) -> JSONObjectLine? {
        guard result.lines.count == 1, let line = JSONObjectLine(result.lines[0]) else {
            Issue.record("\(what): not one JSON line: \(result)")
            return nil
        }
        return line
    }

    /// Whether a human STATE column says "not on the server yet": `local_only`, or
    /// `uploading 0/N` while the store's attempt to reach an unreachable server runs (the
    /// uploader reports offset 0 before its first request for a file of one chunk).
    static func notUploaded(_ state: String) -> Bool {
        state == "local_only" || state.hasPrefix("uploading 0/")
    }

    /// The same for an `attachments --json` line.
    static func notUploaded(_ line: JSONObjectLine) -> Bool {
        line["sent"] as? Int == 0 && ["local_only", "uploading"].contains(line["state"] as? String ?? "")
    }

    /// Where `docctl serve` keeps a complete attachment of tenant `acme` (docs/attachments.md,
    /// "The blob store").
    static func serverBlob(_ server: ServerProcess, _ id: String) -> String {
        server.dataDirectory + "/attachments/acme/" + id.prefix(2) + "/" + id
    }

    // MARK: offline, then synced, then read by another client

    @Test func attachOfflineThenSyncUploadsItAndAnotherClientGetsTheSameBytes() async throws {
        // Nothing listens on the port yet: every connection is refused at once, and the port
        // stays ours until the server starts on it.
        let reservation = try LoopbackPortReservation()
        defer { reservation.release() }
        let port = reservation.port
        let server = try ServerProcess(port: port)
        defer { server.kill(); server.removeData() }
        let docctl = try DocctlRunner(server: "http://127.0.0.1:\(port)", secret: server.secretFile)
        defer { docctl.removeHome() }
        let aliceCache = docctl.home + "/alice-cache"
        let alice = docctl.user("alice") + ["--cache", aliceCache]

        let scan = ClientAttachmentTests.photo(7, bytes: 300_000)
        let sketch = ClientAttachmentTests.photo(8, bytes: 2_000)
        let blob = ClientAttachmentTests.photo(9, bytes: 1_000)
        try Self.write(scan, to: docctl.home + "/scan.PDF")
        try Self.write(sketch, to: docctl.home + "/sketch.png")
        try Self.write(blob, to: docctl.home + "/blob.dat")

        // Offline: each attach is accepted by the cache and answered local_only at once (the
        // server's health check fails), not after the grace an upload gets.
        let attachScan = try await docctl.run(["attach", docctl.home + "/scan.PDF", "--json"] + alice)
        let attachSketch = try await docctl.run(["attach", docctl.home + "/sketch.png", "--content-type", "image/x-sketch"] + alice)
        let attachBlob = try await docctl.run(["attach", docctl.home + "/blob.dat", "--json"] + alice)
        // Each process's own running time (not the test's wall time, which a saturated pool
        // stretches): waiting out the grace, the three took 9 s or more.
        let runningTimes = [attachScan, attachSketch, attachBlob].map(\.runningTime)
        let total = runningTimes.compactMap { $0 }.reduce(Duration.zero, +)
        #expect(!runningTimes.contains(nil) && total < .seconds(3) * 3,
                "3 offline attaches ran \(total) in all (\(runningTimes)): each waited out the grace")

        #expect(attachScan.status == 0, "\(attachScan)")
        let scanLine = try #require(Self.onlyJSONLine(attachScan, "attach --json"))
        #expect(scanLine.keys == Self.summaryKeys, "\(scanLine)")
        let scanID = Self.sha256(scan)
        #expect(scanLine["id"] as? String == scanID, "the id is the content's SHA-256: \(scanLine)")
        #expect(scanLine["sha256"] as? String == scanID)
        #expect(scanLine["state"] as? String == "local_only")
        #expect(scanLine["size"] as? Int == scan.count)
        #expect(scanLine["contentType"] as? String == "application/pdf", "guessed from the extension, case-insensitive")

        #expect(attachSketch.status == 0, "\(attachSketch)")
        let sketchID = Self.sha256(sketch)
        #expect(attachSketch.lines == ["\(sketchID)  local_only  2000 bytes  image/x-sketch"], "\(attachSketch)")

        #expect(attachBlob.status == 0, "\(attachBlob)")
        let blobLine = try #require(Self.onlyJSONLine(attachBlob, "attach --json"))
        #expect(blobLine["contentType"] as? String == "application/octet-stream", "an unknown extension: \(blobLine)")
        let blobID = Self.sha256(blob)

        // The cache lists them, oldest first, none sent yet.
        let offlineList = try await docctl.run(["attachments", "--json"] + alice)
        #expect(offlineList.status == 0, "\(offlineList)")
        let listed = offlineList.lines.compactMap(JSONObjectLine.init)
        #expect(listed.count == 3, "\(offlineList)")
        #expect(listed.map { $0["id"] as? String } == [scanID, sketchID, blobID], "\(offlineList)")
        for line in listed {
            #expect(line.keys == Self.detailKeys, "\(line)")
            #expect(Self.notUploaded(line), "\(line)")
            #expect(line["error"] is NSNull, "\(line)")
            #expect((line["createdAt"] as? String).map { (try? Timestamp(rfc3339: $0)) != nil } == true, "\(line)")
        }
        let humanList = try await docctl.run(["attachments"] + alice)
        #expect(humanList.status == 0, "\(humanList)")
        #expect(humanList.lines.count == 4 && humanList.lines.last == "3 attachments", "\(humanList)")
        let expectedRows = [
            (scanID, "300000 bytes  application/pdf"), (sketchID, "2000 bytes  image/x-sketch"),
            (blobID, "1000 bytes  application/octet-stream"),
        ]
        for ((id, rest), row) in zip(expectedRows, humanList.lines) {
            let columns = row.components(separatedBy: "  ")
            #expect(columns.count == 4 && columns[0] == id && Self.notUploaded(columns[1])
                        && columns[2...].joined(separator: "  ") == rest, "\(row)")
        }

        // A document refers to the scan ({"$attachment": id} through the JSON reader): queued,
        // and an offline listen on the same cache shows the reference local_only.
        let form = try await docctl.run(["set", "kyc/f1", #"{"name": "Ada", "scan": {"$attachment": "\#(scanID)"}}"#] + alice)
        #expect(form.status == 0 && form.lines.first?.hasPrefix("kyc/f1: pending (batch ") == true, "\(form)")
        let pendingListen = try await docctl.run(["listen", "kyc/f1", "--count", "1"] + alice)
        #expect(pendingListen.status == 0, "\(pendingListen)")
        let pendingReference = pendingListen.lines.last ?? ""
        #expect(pendingReference.hasPrefix("  attachment \(scanID)  ")
                    && Self.notUploaded(String(pendingReference.dropFirst("  attachment \(scanID)  ".count))), "\(pendingListen)")
        #expect(pendingListen.lines.contains(#"  {"name":"Ada","scan":{"$attachment":"\#(scanID)"}}"#), "\(pendingListen)")

        // The server starts on that port: sync uploads the scan before the form, then the form.
        reservation.release()
        try await server.start()
        #expect(server.port == port)
        let sync = try await docctl.run(["sync", "--timeout", "60"] + alice)
        #expect(sync.status == 0, "\(sync)")
        #expect(sync.lines == ["synced: 1 batch sent, 0 rejected"], "\(sync)")
        let onlineList = try await docctl.run(["attachments", "--json"] + alice)
        let scanListed = try #require(onlineList.lines.compactMap(JSONObjectLine.init).first { $0["id"] as? String == scanID },
                                      "\(onlineList)")
        #expect(scanListed["state"] as? String == "uploaded", "\(scanListed)")
        #expect(scanListed["sent"] as? Int == scan.count, "\(scanListed)")

        // The server holds exactly those bytes under the id.
        let stored = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.serverBlob(server, scanID))))
        #expect(Self.sha256(stored) == scanID)
        #expect(stored == scan)

        // Another client (bob, his own cache) reads the form and gets the scan's bytes.
        let bob = docctl.user("bob")
        let read = try await docctl.run(["get", "kyc/f1", "--json"] + bob)
        #expect(read.status == 0, "\(read)")
        let document = try #require(Self.onlyJSONLine(read, "get --json"))
        let data = document["data"] as? [String: Any]
        #expect((data?["scan"] as? [String: Any])?["$attachment"] as? String == scanID, "\(read)")
        let out = docctl.home + "/bob-scan.pdf"
        let get = try await docctl.run(["attachment", "get", scanID, "--out", out] + bob)
        #expect(get.status == 0, "\(get)")
        #expect(get.lines == ["\(scanID): 300000 bytes (application/pdf) written to \(out)"], "\(get)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: out))) == scan)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: docctl.home).filter { $0.contains(".docctl-") }
        #expect(leftovers.isEmpty, "temporary files left beside --out: \(leftovers)")

        // listen shows the reference: remote on a private cache (bob's listen), uploaded on
        // alice's cache; a document without attachments is printed as before.
        let plain = try await docctl.run(["set", "kyc/f0", #"{"name": "plain"}"#, "--wait"] + bob)
        #expect(plain.status == 0, "\(plain)")
        let remote = try await docctl.run(["listen", "kyc", "--limit", "10", "--count", "1", "--json"] + bob)
        #expect(remote.status == 0, "\(remote)")
        let snapshot = try #require(Self.onlyJSONLine(remote, "listen --json"))
        #expect(snapshot.keys == ["type", "fromCache", "hasPendingWrites", "size", "changes"], "\(snapshot)")
        let changes = snapshot["changes"] as? [[String: Any]] ?? []
        #expect(changes.map { $0["path"] as? String } == ["kyc/f0", "kyc/f1"], "\(snapshot)")
        #expect(changes.first?["attachments"] == nil, "no attachments field without references: \(snapshot)")
        let references = changes.last?["attachments"] as? [[String: Any]]
        #expect(references?.count == 1, "\(snapshot)")
        #expect(references?.first?["id"] as? String == scanID)
        #expect(references?.first?["state"] as? String == "remote")
        #expect(references?.first?["size"] is NSNull)
        #expect(JSONObjectLine.topLevelKeys(remote.lines[0].components(separatedBy: #""attachments":["#).last ?? "")
                    .prefix(5) == ["id", "state", "size", "sent", "error"], "\(remote)")

        let human = try await docctl.run(["listen", "kyc", "--limit", "10", "--count", "1"] + bob)
        #expect(human.status == 0, "\(human)")
        #expect(human.lines == [
            "── 2 documents · synced",
            #"+ kyc/f0 [0]  {"name":"plain"}"#,
            #"+ kyc/f1 [1]  {"name":"Ada","scan":{"$attachment":"\#(scanID)"}}"#,
            "  attachment \(scanID)  remote",
        ], "\(human)")
        let local = try await docctl.run(["listen", "kyc/f1", "--count", "1"] + alice)
        #expect(local.status == 0, "\(local)")
        #expect(local.lines.last == "  attachment \(scanID)  uploaded", "\(local)")
        let localJSON = try await docctl.run(["listen", "kyc/f1", "--count", "1", "--json"] + alice)
        let localReference = (Self.onlyJSONLine(localJSON, "listen DOC --json")?["changes"] as? [[String: Any]])?
            .first?["attachments"] as? [[String: Any]]
        #expect(localReference?.first?["state"] as? String == "uploaded", "\(localJSON)")
        #expect(localReference?.first?["sent"] as? Int == scan.count, "\(localJSON)")

        // Offline again: bob's downloaded copy is served from his cache; carol, who never
        // downloaded it, cannot get it (exit 3) and no file is written.
        server.kill()
        let cached = try await docctl.run(["attachment", "get", scanID, "--out", out + ".again", "--json"] + bob)
        #expect(cached.status == 0, "\(cached)")
        let cachedLine = try #require(Self.onlyJSONLine(cached, "attachment get --json"))
        #expect(cachedLine.keys == ["id", "size", "sha256", "contentType", "out"], "\(cachedLine)")
        #expect(cachedLine["size"] as? Int == scan.count)
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: out + ".again"))) == scan)
        let unreachable = try await docctl.run(["attachment", "get", scanID, "--out", docctl.home + "/carol.pdf"] + docctl.user("carol"))
        #expect(unreachable.status == 3, "\(unreachable)")
        #expect(unreachable.stderr.contains("[unavailable]"), "\(unreachable)")
        #expect(!FileManager.default.fileExists(atPath: docctl.home + "/carol.pdf"))
    }

    // MARK: bad input

    @Test func badInputIsRefusedWithAnErrorAndNothingIsStored() async throws {
        try await DocctlEndToEndTests.withServer { server, docctl in
            let cache = docctl.home + "/dora-cache"
            let dora = docctl.user("dora") + ["--cache", cache]
            let empty = docctl.home + "/empty.jpg"
            try #require(FileManager.default.createFile(atPath: empty, contents: Data()))
            let folder = docctl.home + "/folder.jpg"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            // One byte over 100 MiB, sparse: refused from its size, before anything is copied.
            let huge = docctl.home + "/huge.bin"
            try #require(FileManager.default.createFile(atPath: huge, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: huge))
            try handle.truncate(atOffset: 100 * 1024 * 1024 + 1)
            try handle.close()
            let fine = docctl.home + "/fine.txt"
            try Self.write(Array("fine".utf8), to: fine)

            let cases: [([String], Int32, String)] = [
                (["attach", docctl.home + "/missing.jpg"], 1, "no file at \(docctl.home)/missing.jpg [notFound]"),
                (["attach", empty], 2, "is empty: an attachment needs at least one byte [invalidArgument]"),
                (["attach", folder], 2, "is a directory, not a file [invalidArgument]"),
                (["attach", huge], 2, "is 104857601 bytes, over the attachment limit of 104857600 bytes"),
                (["attach", fine, "--content-type", "text"], 2, "'text' is not a content type"),
            ]
            for (arguments, status, message) in cases {
                let result = try await docctl.run(arguments + dora)
                #expect(result.status == status, "\(arguments): \(result)")
                #expect(result.stdout.isEmpty, "\(arguments): \(result)")
                #expect(result.stderr.hasPrefix("error: ") && result.stderr.contains(message), "\(arguments): \(result)")
            }
            // With --json the error is also a JSON line on stdout.
            let jsonMissing = try await docctl.run(["attach", docctl.home + "/missing.jpg", "--json"] + dora)
            #expect(jsonMissing.status == 1, "\(jsonMissing)")
            let errorLine = try #require(Self.onlyJSONLine(jsonMissing, "attach --json error"))
            #expect(errorLine.keys == ["type", "code", "message"] && errorLine["code"] as? String == "notFound", "\(errorLine)")

            // Nothing stored: no attachment listed, no file in the cache, none on the server.
            let list = try await docctl.run(["attachments"] + dora)
            #expect(list.status == 0 && list.lines == ["0 attachments"], "\(list)")
            let inCache = (try? FileManager.default.contentsOfDirectory(atPath: cache + "/acme/dora/attachments")) ?? []
            #expect(inCache.isEmpty, "files left in the cache: \(inCache)")
            let onServer = FileManager.default.enumerator(atPath: server.dataDirectory + "/attachments")?.allObjects ?? []
            #expect(onServer.isEmpty, "files on the server: \(onServer)")

            // attachment get: a bad id is a usage error; an unknown one is the server's notFound.
            let out = docctl.home + "/out.bin"
            for bad in ["abc", String(repeating: "A", count: 64), String(repeating: "0", count: 63) + "/"] {
                let result = try await docctl.run(["attachment", "get", bad, "--out", out] + dora)
                #expect(result.status == 2, "\(bad): \(result)")
                #expect(result.stderr.contains("is not an attachment id: an id is the SHA-256 of the content as 64 lowercase hex characters [invalidArgument]"),
                        "\(bad): \(result)")
            }
            let unknown = String(repeating: "0", count: 64)
            let notFound = try await docctl.run(["attachment", "get", unknown, "--out", out, "--json"] + dora)
            #expect(notFound.status == 1, "\(notFound)")
            #expect(notFound.stderr.hasPrefix("error: ") && notFound.stderr.contains("[notFound]"), "\(notFound)")
            #expect(Self.onlyJSONLine(notFound, "attachment get --json error")?["code"] as? String == "notFound", "\(notFound)")
            let intoFolder = try await docctl.run(["attachment", "get", unknown, "--out", folder] + dora)
            #expect(intoFolder.status == 2 && intoFolder.stderr.contains("is a directory"), "\(intoFolder)")
            #expect(!FileManager.default.fileExists(atPath: out), "no file written for a failed get")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: docctl.home).filter { $0.contains(".docctl-") }
            #expect(leftovers.isEmpty, "\(leftovers)")
        }
    }

    // MARK: a refused upload

    @Test func anUploadTheServerRefusesIsFailedWithItsErrorAndExitsOne() async throws {
        try await DocctlEndToEndTests.withServer(["--max-attachment-bytes", "1000"]) { server, docctl in
            let erin = docctl.user("erin")
            let notes = ClientAttachmentTests.photo(11, bytes: 2_000)
            let file = docctl.home + "/notes.txt"
            try Self.write(notes, to: file)
            let id = Self.sha256(notes)

            let attach = try await docctl.run(["attach", file, "--json"] + erin)
            #expect(attach.status == 1, "\(attach)")
            let line = try #require(Self.onlyJSONLine(attach, "attach --json"))
            #expect(line.keys == Self.summaryKeys, "\(line)")
            #expect(line["state"] as? String == "failed", "\(line)")
            #expect(line["contentType"] as? String == "text/plain")
            #expect(attach.stderr.contains("error: the server refused attachment \(id) (\(file))"), "\(attach)")
            #expect(attach.stderr.contains("[invalidArgument]"), "\(attach)")

            let list = try await docctl.run(["attachments", "--json"] + erin)
            let listed = try #require(Self.onlyJSONLine(list, "attachments --json"))
            #expect(listed["state"] as? String == "failed", "\(listed)")
            let error = listed["error"] as? [String: Any]
            #expect(error?["code"] as? String == "invalidArgument", "\(listed)")
            #expect((error?["message"] as? String)?.contains("1000") == true, "the server's limit is named: \(listed)")
            let human = try await docctl.run(["attachments"] + erin)
            #expect(human.lines.first?.hasPrefix("\(id)  failed  2000 bytes  text/plain  invalidArgument: ") == true, "\(human)")
            #expect(human.lines.last == "1 attachment", "\(human)")
            #expect(!FileManager.default.fileExists(atPath: Self.serverBlob(server, id)))
        }
    }
}
