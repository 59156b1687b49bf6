import DocCache
import DocModel
import DocServer
import DocTestSupport
import Foundation
import Testing

/// Issue 18: attachment uploads through a TCP proxy that cuts connections at random byte
/// points (seeded; `ATTACHMENT_PROXY_SEED=0x…` replays another seed). A DocCache client talks to
/// the real server only through the proxy — HTTP uploads and the WebSocket alike — adds five
/// attachments of 1–3 MiB and writes a document that refers to them. Cuts land inside the upload
/// bodies (the server keeps what arrived, the client asks how far it got and goes on), in the
/// server's answers (the server acted, the client never heard) and in the WebSocket. In the end
/// the server's blob store holds each attachment exactly once, complete, hashing to its id,
/// with no partial upload left, and the document is committed exactly once, after them.
@Suite("Attachments through a cutting proxy", .serialized, .timeLimit(.minutes(2)))
struct AttachmentProxyTests {
    static let defaultSeed: UInt64 = 0xA77A_C4ED_0018

    static var seed: UInt64 {
        guard let text = ProcessInfo.processInfo.environment["ATTACHMENT_PROXY_SEED"] else { return defaultSeed }
        let digits = text.hasPrefix("0x") ? String(text.dropFirst(2)) : text
        return UInt64(digits, radix: text.hasPrefix("0x") ? 16 : 10) ?? defaultSeed
    }

    @Test func fiveUploadsCutAtRandomBytesAreStoredOnceCompleteAndVerified() async throws {
        let seed = Self.seed
        let seedText = "seed 0x\(String(seed, radix: 16)) (replay: ATTACHMENT_PROXY_SEED=0x\(String(seed, radix: 16)))"
        let started = ContinuousClock.now
        let server = try await LiveServer(rules: try LiveServer.defaultRules())
        defer { server.removeData() }
        let blobRoot = server.dataDirectory + "/attachments"
        // Each attachment's first two upload bodies are cut at a random byte, later ones with a
        // chance of 0.15; a request head now and then (0.03); the answers to the first two
        // complete uploads (then 0.1), in their status line or after their header block — not in
        // between: there a cut crashes this whole test process (FoundationNetworking's fatalError
        // "Transfer completed, but there's no response", swift-corelibs-foundation#5285; see
        // anAnswerCutInsideItsHeadersIsATransientFailureNotACrash). The proxy also makes each
        // HTTP request use its own connection (`Connection: close` on the answers): a connection
        // lost under a request on a reused connection stalls this client for 60 s (see
        // aPUTHeadCutOnAReusedConnectionIsRetriedWithoutStalling).
        var plan = ByteCuttingProxy.Plan()
        plan.answerCutPlace = .outsideHeaderBlock
        plan.oneRequestPerConnection = true
        // At most three body and answer cuts per attachment: the client backs off 1.5 times
        // longer after each failure of the same upload (1 s, 1.5 s, 2.25 s, …), so more would
        // stretch the test past its deadline on a loaded machine.
        plan.maxCutsPerTarget = 3
        let proxy = try ByteCuttingProxy(targetPort: server.address.port, seed: seed, plan: plan)
        defer { proxy.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-attach-proxy-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let token = try await server.token(uid: "alice")
        let endpoint = try ServerEndpoint(url: "http://127.0.0.1:\(proxy.port)") { token }
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "alice", server: endpoint)

        // Five attachments of 1–3 MiB (sizes and bytes from the seed), then one batch: the
        // document that refers to all five and a counter that proves it applied once.
        var sizes = SplitMix64(seed: seed)
        let photos = (0..<5).map { i in
            randomPhoto(seed: seed &+ UInt64(i) &+ 1, bytes: (1 << 20) + Int(sizes.next() % UInt64(2 << 20)))
        }
        var ids: [AttachmentID] = []
        for bytes in photos {
            ids.append(try await store.attachments.add(bytes: bytes, contentType: "image/jpeg").id)
        }
        #expect(ids.map(\.hex) == photos.map { sha256Hex($0) })
        var data: [String: FieldValue] = ["title": "site visit", "photoCount": .value(.integer(Int64(ids.count)))]
        for (i, id) in ids.enumerated() { data["photo\(i)"] = .attachment(id) }
        var batch = store.batch()
        try batch.setData(data, for: store.document("albums/a1"))
        try batch.setData(["n": .increment(1)], for: store.document("counters/albums"), merge: true)
        let album = try await batch.commit()

        // Everything gets through, within a deadline. The uploads run one at a time, and up to
        // three cuts per attachment cost it up to 1 + 1.5 + 2.25 s of backoff, stretched up to
        // 1.5× by jitter: ~36 s of waiting for the five in the worst case, before the 5–15 MiB
        // go through the proxy. Alone this takes ~12 s; 50 s was once too short in a full
        // `make test` on the 2-core machine, so the deadline has room for a loaded machine.
        let done = await eventually {
            let states = await store.attachments.all().map(\.state)
            return states.count == 5 && states.allSatisfy { $0 == .uploaded } && album.isCommitted
        }
        let states = await store.attachments.all().map(\.state.description)
        let pending = try await store.pendingWrites()
        let lastError = await store.lastSyncError
        let stats = proxy.statistics
        let elapsed = ContinuousClock.now - started
        print("attachment-proxy \(seedText): \(elapsed) — \(stats)")
        if !done {
            let blobs = try? await BlobStoreSnapshot.read(root: blobRoot, tenant: "acme")
            let bodies = ids.map { stats.putBodies["/attachments/\($0.hex)"] ?? [] }
            Issue.record("""
                not done within \(Int(livenessCap)) s (\(seedText)): attachments \(states); pending \(pending); last sync error \
                \(String(describing: lastError)); the server's blob store: \(String(describing: blobs)); PUT bodies per \
                attachment: \(bodies); proxy: \(stats)
                the proxy's last events:
                  \(proxy.events.suffix(40).joined(separator: "\n  "))
                """)
            await store.close()
            proxy.stop()
            await server.stop()
            return
        }
        #expect(try await store.failedWrites().isEmpty, "\(seedText)")
        #expect(await store.pendingWriteCount == 0, "\(seedText): \(pending)")

        // The proxy really cut uploads in the middle of their bodies, repeatedly, and answers to
        // uploads the server had completed.
        #expect(stats.cutsInUploadBodies >= plan.guaranteedBodyCuts * ids.count,
                "only \(stats.cutsInUploadBodies) cuts inside upload bodies (\(seedText)): \(stats)")
        #expect(stats.cutsInUploadAnswers >= 1, "no answer to an upload was cut (\(seedText)): \(stats)")
        // After a cut the client went on from the bytes the server kept: some PUT body is shorter
        // than its attachment. (It first sends the whole attachment again, which the server
        // refuses with 409 and the offset it has: the uploader skips asking for attachments of
        // one chunk.)
        let bodies = zip(ids, photos).map { id, bytes in (size: bytes.count, sent: stats.putBodies["/attachments/\(id.hex)"] ?? []) }
        print("attachment-proxy PUT bodies per attachment (size: lengths sent): \(bodies.map { "\($0.size): \($0.sent)" })")
        let resumed = bodies.filter { body in body.sent.contains { $0 < body.size } }.count
        #expect(resumed >= 1, "no upload was continued from an offset (\(seedText)): \(bodies)")

        // The blob store, read from the server's disk: one complete entry per id, the bytes
        // hash to the id and have the size, no partial upload and nothing else left over.
        let blobs = try await BlobStoreSnapshot.read(root: blobRoot, tenant: "acme")
        #expect(Set(blobs.complete.keys) == Set(ids), "\(seedText): \(blobs)")
        #expect(blobs.listing.count == ids.count && blobs.listing.allSatisfy(\.isComplete), "\(seedText): \(blobs.listing)")
        #expect(blobs.partialFiles.isEmpty, "partial uploads left (\(seedText)): \(blobs.partialFiles)")
        #expect(blobs.strayFiles.isEmpty, "stray files (\(seedText)): \(blobs.strayFiles)")
        for (id, bytes) in zip(ids, photos) {
            guard let stored = blobs.complete[id] else { continue }
            #expect(stored.storedSHA256 == id.hex && stored.metadata.sha256 == id.hex, "attachment \(id) (\(seedText))")
            #expect(stored.storedSize == Int64(bytes.count) && stored.metadata.size == Int64(bytes.count), "attachment \(id) (\(seedText))")
        }

        // The document, read from the server directly (not through the proxy): committed once,
        // after every attachment it refers to was complete.
        let onServer = try await ServerDocument.read("albums/a1", url: server.url, token: token)
        let document = try #require(onServer, "the server has no albums/a1 (\(seedText))")
        for (i, id) in ids.enumerated() {
            #expect(document.data.fields["photo\(i)"] == .attachment(id), "\(seedText)")
            if let stored = blobs.complete[id] {
                #expect(stored.metadata.createdAt.microseconds < document.createTime.microseconds,
                        "attachment \(id) completed at \(stored.metadata.createdAt), after the document's commit \(document.createTime) (\(seedText))")
            }
        }
        #expect(document.createTime == document.version, "written once (\(seedText))")
        let counter = try await ServerReads.document("counters/albums", url: server.url, token: token)
        #expect(counter?["n"] == .integer(1), "the batch applied exactly once: \(String(describing: counter)) (\(seedText))")

        await store.close()
        proxy.stop()
        await server.stop()
    }

    /// A connection lost after the server's status line and before the end of its header
    /// block — the answer to a complete upload — must be one more transient failure: the client
    /// asks how far the upload got (complete) and sends the write. The client runs in a child
    /// process (`doccache-crash-child`, attachments mode, pointed at the proxy), so that it may
    /// crash without taking the test runner along.
    ///
    /// Known failure (Swift 6.3.1 on Linux): `HTTPAttachmentTransport` sends its requests
    /// through `URLSession`, and FoundationNetworking ends the process with
    /// `Fatal error: Transfer completed, but there's no response.` (NativeProtocol.swift:240,
    /// swift-corelibs-foundation#5285; fixed upstream by #5286, not in this toolchain). A
    /// device whose connection drops at that moment crashes; this test fails until the
    /// transport stops using FoundationNetworking's URLSession or the toolchain has the fix.
    @Test func anAnswerCutInsideItsHeadersIsATransientFailureNotACrash() async throws {
        let seed = Self.seed
        let seedText = "seed 0x\(String(seed, radix: 16))"
        let server = try await LiveServer(rules: try LiveServer.defaultRules())
        defer { server.removeData() }
        var plan = ByteCuttingProxy.Plan()
        plan.guaranteedBodyCuts = 0
        plan.bodyCutChance = 0
        plan.headCutChance = 0
        plan.webSocketCuts = 0
        plan.guaranteedAnswerCuts = 1
        plan.answerCutChance = 0
        plan.answerCutPlace = .insideHeaderBlock
        let proxy = try ByteCuttingProxy(targetPort: server.address.port, seed: seed, plan: plan)
        defer { proxy.stop() }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-attach-answer-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let photo = randomPhoto(seed: seed, bytes: 1_500_000)
        try Data(photo).write(to: URL(fileURLWithPath: root + "/photo.jpg"))
        let id = try AttachmentID(sha256Hex(photo))
        let token = try await server.token(uid: "child")

        let child = try ChildProcess(executable: try ServerProcess.executable("doccache-crash-child"),
                                     arguments: [root + "/store", "--attachments-form", "--server", "http://127.0.0.1:\(proxy.port)",
                                                 "--token", token, root + "/photo.jpg"],
                                     keepStandardInputOpen: true)
        defer { child.kill() }
        // Done when the server has the form (sent only after the upload), or the child died.
        var form: [String: Value]?
        let ended = await eventually(45) {
            form = try? await ServerReads.document("kyc/f1", url: server.url, token: token)
            return form != nil || !child.isRunning
        }
        let survived = child.isRunning
        child.kill()
        let stats = proxy.statistics
        print("attachment-proxy answer cut (\(seedText)): \(stats)")
        #expect(stats.cutsInUploadAnswers == 1, "the proxy never cut an answer inside its headers (\(seedText)): \(stats)")
        // Listed, not hidden: swift-testing reports it as a known issue while FoundationNetworking
        // crashes, and fails this test once it no longer does (then drop the wrapper).
        await withKnownIssue("FoundationNetworking crashes on an answer cut inside its headers (swift-corelibs-foundation#5285)") {
            let crash = child.standardError.split(separator: "\n").filter { $0.contains("Fatal error") || $0.contains("crashed:") }
            #expect(survived, """
                the client process died when the answer to its complete upload was cut inside the header block \
                (\(seedText)): \(crash.isEmpty ? String(child.standardError.prefix(400)) : crash.joined(separator: " / "))
                """)
            #expect(ended, "neither the form reached the server nor did the child end within 45 s (\(seedText))")
            #expect(form?["photo0"] == .attachment(id), "the form never reached the server (\(seedText)): \(String(describing: form)); \(stats)")
            if let stored = try await BlobStoreSnapshot.read(root: server.dataDirectory + "/attachments", tenant: "acme").complete[id] {
                #expect(stored.storedSHA256 == id.hex)
            } else {
                Issue.record("the photo is not complete on the server (\(seedText))")
            }
        }
        proxy.stop()
        await server.stop()
    }

    /// A cut upload goes on within a backoff step, and no attachment request rides a reused
    /// (keep-alive) connection. Set up: the proxy cuts the first upload body (the server keeps a
    /// prefix), the client is told so (409, then `GET …/upload`) and sends the rest; the proxy
    /// also cuts the head of any `PUT` sent on a reused connection.
    ///
    /// Why no reuse: on Linux (Swift 6.3.1) libcurl, under FoundationNetworking's `URLSession`,
    /// resends a request whose reused connection died on a fresh connection with its head and
    /// `Content-Length` but without a byte of its body. The server then waits for the body while
    /// holding the attachment's upload lock, and the client waits for the answer until its 60 s
    /// request timeout. Reproduced without this package (a `URLSession` `GET` then a 37,872-byte
    /// `PUT` to a server that cuts the second request's head: the retried head arrives with 0
    /// body bytes). `HTTPAttachmentTransport` therefore sends `Connection: close`.
    @Test func aCutUploadGoesOnWithoutStallingAndNoRequestReusesAConnection() async throws {
        let seed = Self.seed
        let seedText = "seed 0x\(String(seed, radix: 16))"
        let server = try await LiveServer(rules: try LiveServer.defaultRules())
        defer { server.removeData() }
        var plan = ByteCuttingProxy.Plan()
        plan.guaranteedBodyCuts = 1
        plan.bodyCutChance = 0
        plan.headCutChance = 0
        plan.guaranteedReusedPUTHeadCuts = 1
        plan.guaranteedAnswerCuts = 0
        plan.answerCutChance = 0
        plan.webSocketCuts = 0
        let proxy = try ByteCuttingProxy(targetPort: server.address.port, seed: seed, plan: plan)
        defer { proxy.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-attach-reuse-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = try await server.token(uid: "alice")
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "alice",
                                                 server: try ServerEndpoint(url: "http://127.0.0.1:\(proxy.port)") { token })
        let photo = randomPhoto(seed: seed, bytes: 40_000)
        let id = try await store.attachments.add(bytes: photo, contentType: "image/jpeg").id
        let note = try await store.document("notes/n1").setData(["photo": .attachment(id)])

        // Without the stall this takes a second or two (one backoff step); the stall lasts 60 s.
        // The cap stays below the stall and leaves room for a saturated suite's waits.
        let done = await eventually(45) { note.isCommitted }
        let stats = proxy.statistics
        let state = await store.attachments.attachment(id)?.state.description ?? "missing"
        print("attachment-proxy reused-connection head cut (\(seedText)): \(stats)")
        #expect(stats.cutsInUploadBodies >= 1, "the proxy never cut an upload body (\(seedText)): \(stats)")
        #expect(stats.reusedHeadCuts == 0, "a PUT was sent on a reused connection (\(seedText)): \(stats)")
        #expect(done, """
            the upload stalled after its body was cut (\(seedText)): attachment \(state); \
            the proxy's last events:
              \(proxy.events.suffix(12).joined(separator: "\n  "))
            """)
        await store.close()
        proxy.stop()
        await server.stop()
    }
}
