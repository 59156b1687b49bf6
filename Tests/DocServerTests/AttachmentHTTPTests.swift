import DocModel
import DocRules
import DocTestSupport
import Foundation
import Synchronization
import Testing
@testable import DocServer

/// The attachment endpoints on a real socket: uploads whole, in chunks and resumed after a cut
/// connection, verification, limits, ids, tokens, tenants, idempotence, the per-id lock,
/// downloads with ranges and access decisions.
@Suite(.serialized) struct AttachmentHTTPTests {
    // MARK: Helpers

    struct Client {
        let server: AttachmentTestServer
        let token: String

        func put(_ id: String, _ body: [UInt8], length: Int? = nil, offset: Int? = nil,
                 contentType: String? = "image/png", auth: Bool = true) async throws -> HTTPAnswer {
            var headers: [String: String] = [:]
            if auth { headers["Authorization"] = "Bearer \(token)" }
            if let contentType { headers["Content-Type"] = contentType }
            headers["Upload-Length"] = String(length ?? body.count)
            if let offset { headers["Upload-Offset"] = String(offset) }
            return try await HTTPClient.send("PUT", server.url + "/attachments/" + id, headers: headers, body: body)
        }

        func state(_ id: String, auth: Bool = true) async throws -> HTTPAnswer {
            try await HTTPClient.send("GET", server.url + "/attachments/\(id)/upload",
                                      headers: auth ? ["Authorization": "Bearer \(token)"] : [:])
        }

        func get(_ id: String, range: String? = nil, auth: Bool = true) async throws -> HTTPAnswer {
            var headers: [String: String] = [:]
            if auth { headers["Authorization"] = "Bearer \(token)" }
            if let range { headers["Range"] = range }
            return try await HTTPClient.send("GET", server.url + "/attachments/" + id, headers: headers)
        }
    }

    static func withServer(maxSize: Int64 = 1 << 20, policy: (any AttachmentAccessPolicy)? = AllowAllAttachmentPolicy(),
                           attachments: Bool = true,
                           _ body: (AttachmentTestServer, Client) async throws -> Void) async throws {
        let server = try await AttachmentTestServer(maxSize: maxSize, policy: policy, attachments: attachments)
        do {
            try await body(server, Client(server: server, token: try await server.token()))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// A raw PUT head (the body follows separately).
    static func rawHead(_ id: AttachmentID, token: String, length: Int, offset: Int = 0, bodyLength: Int) -> String {
        "PUT /attachments/\(id.hex) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
            + "Content-Type: application/pdf\r\nUpload-Length: \(length)\r\nUpload-Offset: \(offset)\r\n"
            + "Content-Length: \(bodyLength)\r\n\r\n"
    }

    /// PUT, retried while another upload of the id still holds its lock (409 `aborted`).
    static func putRetrying(_ client: Client, _ id: String, _ body: [UInt8], length: Int, offset: Int) async throws -> HTTPAnswer {
        var answer = try await client.put(id, body, length: length, offset: offset, contentType: "application/pdf")
        let deadline = ContinuousClock.now + .seconds(60)
        while answer.status == 409, answer.errorCode == "aborted", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            answer = try await client.put(id, body, length: length, offset: offset, contentType: "application/pdf")
        }
        return answer
    }

    // MARK: Uploads

    @Test func uploadWholeThenDownload() async throws {
        try await Self.withServer { server, client in
            let blob = TestBlob(count: 100_000)
            let put = try await client.put(blob.id.hex, blob.bytes, contentType: "image/jpeg")
            #expect(put.status == 201)
            #expect(put.json["id"] as? String == blob.id.hex)
            #expect(put.int("size") == 100_000 && put.int("received") == 100_000)
            #expect(put.json["complete"] as? Bool == true)
            #expect(put.json["contentType"] as? String == "image/jpeg")
            #expect(put.json["sha256"] as? String == blob.id.hex)

            let state = try await client.state(blob.id.hex)
            #expect(state.status == 200 && state.json["complete"] as? Bool == true && state.int("received") == 100_000)

            let get = try await client.get(blob.id.hex)
            #expect(get.status == 200)
            #expect(get.body == blob.bytes)
            #expect(BlobDigest.id(of: get.body) == blob.id)
            #expect(get.headers["content-type"] == "image/jpeg")
            #expect(get.headers["content-length"] == "100000")
            #expect(get.headers["x-content-sha256"] == blob.id.hex)
            let stored = try await server.blobs.list(tenant: TenantID("acme"))
            #expect(stored.map(\.id) == [blob.id] && stored.allSatisfy(\.isComplete))
        }
    }

    @Test func uploadsAreNotCappedByTheFrameworksBodyLimit() async throws {
        // Hummingbird caps bodies it collects at 2 MiB; uploads are streamed, so only maxSize counts.
        try await Self.withServer(maxSize: 8 << 20) { server, client in
            let blob = TestBlob(count: 3 << 20, seed: 16)
            let put = try await client.put(blob.id.hex, blob.bytes, contentType: "video/mp4")
            #expect(put.status == 201 && put.int("size") == Int64(3 << 20))
            let get = try await client.get(blob.id.hex)
            #expect(get.body.count == 3 << 20 && BlobDigest.id(of: get.body) == blob.id)
        }
    }

    @Test func uploadInTwoChunks() async throws {
        try await Self.withServer { _, client in
            let blob = TestBlob(count: 50_001, seed: 2)
            let half = 25_000
            let first = try await client.put(blob.id.hex, Array(blob.bytes[..<half]), length: blob.bytes.count)
            #expect(first.status == 200)
            #expect(first.json["complete"] as? Bool == false)
            #expect(first.int("received") == Int64(half) && first.int("size") == 50_001)
            #expect(first.json["sha256"] == nil)

            let state = try await client.state(blob.id.hex)
            #expect(state.status == 200 && state.int("received") == Int64(half) && state.json["complete"] as? Bool == false)
            #expect(state.json["contentType"] as? String == "image/png")
            #expect(try await client.get(blob.id.hex).status == 404)

            // A wrong offset is refused with what the server has.
            let wrong = try await client.put(blob.id.hex, blob.bytes, length: blob.bytes.count, offset: 0)
            #expect(wrong.status == 409 && wrong.int("received") == Int64(half) && wrong.errorCode == "aborted")

            let second = try await client.put(blob.id.hex, Array(blob.bytes[half...]), length: blob.bytes.count, offset: half)
            #expect(second.status == 201 && second.json["complete"] as? Bool == true)
            #expect(try await client.get(blob.id.hex).body == blob.bytes)
        }
    }

    @Test func anotherDeclaredSizeReplacesAnIdlePartialUpload() async throws {
        try await Self.withServer { _, client in
            let blob = TestBlob(count: 2_000, seed: 17)
            // An upload declared with a wrong size (the id fixes the size: one of them is wrong).
            let wrongSize = try await client.put(blob.id.hex, Array(blob.bytes[..<500]), length: 3_000)
            #expect(wrongSize.status == 200 && wrongSize.int("received") == 500)
            // Continuing with the right size: the idle partial gives way, the client restarts at 0.
            let resume = try await client.put(blob.id.hex, Array(blob.bytes[500...]), length: 2_000, offset: 500)
            #expect(resume.status == 409 && resume.errorCode == "aborted" && resume.int("received") == 0)
            #expect(try await client.state(blob.id.hex).status == 404)
            #expect(try await client.put(blob.id.hex, blob.bytes).status == 201)
        }
    }

    @Test func resumeAfterTheConnectionIsCutMidBody() async throws {
        try await Self.withServer { server, client in
            let blob = TestBlob(count: 200_000, seed: 3)
            let sent = 120_000
            let socket = try await RawHTTPConnection(port: server.address.port)
            try await socket.send(Self.rawHead(blob.id, token: client.token, length: blob.bytes.count, bodyLength: blob.bytes.count))
            try await socket.send(Array(blob.bytes[..<sent]))
            // The upload has begun (its bytes are gathered into larger writes: the state shows
            // them once written); then the connection is cut.
            #expect(await eventually { (try? await client.state(blob.id.hex).status) == 200 })
            socket.close()

            // Everything that arrived before the cut is written.
            #expect(await eventually { (try? await client.state(blob.id.hex).int("received")) == Int64(sent) })
            let state = try await client.state(blob.id.hex)
            #expect(state.status == 200 && state.json["complete"] as? Bool == false)
            let received = try #require(state.int("received"))
            // What the server kept is exactly a prefix of the content.
            let tenant = try TenantID("acme")
            let kept = try Data(contentsOf: URL(fileURLWithPath: FileBlobLayout(root: server.blobs.root).partialPath(blob.id, tenant: tenant)))
            #expect(Array(kept) == Array(blob.bytes[..<Int(received)]))

            let rest = try await Self.putRetrying(client, blob.id.hex, Array(blob.bytes[Int(received)...]),
                                                  length: blob.bytes.count, offset: Int(received))
            #expect(rest.status == 201)
            #expect(rest.json["sha256"] as? String == blob.id.hex)
            let get = try await client.get(blob.id.hex)
            #expect(BlobDigest.id(of: get.body) == blob.id && get.headers["content-type"] == "application/pdf")
        }
    }

    @Test func wrongHashIsRefusedAndNothingIsStored() async throws {
        try await Self.withServer { server, client in
            let blob = TestBlob(count: 10_000, seed: 4)
            var tampered = blob.bytes
            tampered[5_000] ^= 0xFF
            let put = try await client.put(blob.id.hex, tampered)
            #expect(put.status == 422)
            #expect(put.errorCode == "invalidArgument")
            #expect(try await client.state(blob.id.hex).status == 404)
            #expect(try await client.get(blob.id.hex).status == 404)
            #expect(try await server.blobs.list(tenant: TenantID("acme")).isEmpty)
            // The right bytes are accepted afterwards.
            #expect(try await client.put(blob.id.hex, blob.bytes).status == 201)
        }
    }

    @Test func limitsAreCheckedBeforeTheBody() async throws {
        try await Self.withServer(maxSize: 64 * 1024) { server, client in
            let blob = TestBlob(count: 1_000, seed: 5)
            let tooLarge = try await client.put(blob.id.hex, blob.bytes, length: 64 * 1024 + 1)
            #expect(tooLarge.status == 413 && tooLarge.errorCode == "invalidArgument")
            let empty = TestBlob(count: 0)
            let zero = try await client.put(empty.id.hex, [])
            #expect(zero.status == 400 && zero.errorCode == "invalidArgument")
            let noType = try await client.put(blob.id.hex, blob.bytes, contentType: nil)
            #expect(noType.status == 400)
            // A body longer than Upload-Length: 400, nothing kept.
            let pastEnd = try await client.put(blob.id.hex, blob.bytes + [1, 2, 3], length: blob.bytes.count)
            #expect(pastEnd.status == 400 && pastEnd.errorCode == "invalidArgument")
            #expect(try await client.state(blob.id.hex).status == 404)
            #expect(try await server.blobs.list(tenant: TenantID("acme")).isEmpty)
        }
    }

    @Test func aChunkedBodyPastTheLengthKeepsNothingBeyondIt() async throws {
        try await Self.withServer { server, client in
            let blob = TestBlob(count: 1_000, seed: 6)
            let socket = try await RawHTTPConnection(port: server.address.port)
            defer { socket.close() }
            var head = Self.rawHead(blob.id, token: client.token, length: blob.bytes.count, bodyLength: 0)
            head = head.replacingOccurrences(of: "Content-Length: 0\r\n", with: "Transfer-Encoding: chunked\r\n")
            let body = blob.bytes + Array(repeating: 7, count: 500)
            try await socket.send(head + String(body.count, radix: 16) + "\r\n")
            try await socket.send(body)
            try await socket.send("\r\n0\r\n\r\n")
            let answer = try await socket.readResponse()
            #expect(answer.status == 400 && answer.errorCode == "invalidArgument")
            #expect(answer.int("received") == 1_000)
            let state = try await client.state(blob.id.hex)
            #expect(state.int("received") == 1_000 && state.json["complete"] as? Bool == false)
            // The bytes up to the length were right: an empty PUT at the end completes it.
            let finish = try await client.put(blob.id.hex, [], length: 1_000, offset: 1_000, contentType: "application/pdf")
            #expect(finish.status == 201)
            #expect(try await client.get(blob.id.hex).body == blob.bytes)
        }
    }

    @Test func badIDsAreRefusedBeforeAnythingIsTouched() async throws {
        try await Self.withServer { server, client in
            let valid = TestBlob(count: 10).id.hex
            for id in ["..%2Fetc", "%2E%2E", valid.uppercased(), String(valid.dropLast()), valid + "0", "zz" + valid.dropFirst(2)] {
                let put = try await client.put(id, [1, 2, 3])
                #expect(put.status == 400 && put.errorCode == "invalidArgument", "\(id)")
                #expect(try await client.get(id).status == 400, "\(id)")
                #expect(try await client.state(id).status == 400, "\(id)")
            }
            // A literal `..` segment, as sent by a client that does not normalize paths.
            let socket = try await RawHTTPConnection(port: server.address.port)
            defer { socket.close() }
            try await socket.send("PUT /attachments/.. HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(client.token)\r\n"
                                  + "Content-Type: image/png\r\nUpload-Length: 3\r\nContent-Length: 3\r\n\r\nabc")
            let raw = try await socket.readResponse()
            #expect(raw.status == 400 && raw.errorCode == "invalidArgument")
            #expect(try FileManager.default.contentsOfDirectory(atPath: server.blobs.root).isEmpty)
        }
    }

    /// A request that asks for its connection to be closed is told in the answer that it is
    /// (`Connection: close`), whatever the answer is, and the connection then ends; without the
    /// option the connection stays open for the next request. A client that ignores its own
    /// request header (libcurl) otherwise writes its next request into the closing connection.
    @Test func anAnswerSaysTheConnectionEndsWhenTheRequestAskedForIt() async throws {
        try await Self.withServer { server, client in
            let blob = TestBlob(count: 3_000, seed: 11)
            let token = "Authorization: Bearer \(client.token)\r\n"
            let asked: [(request: String, body: [UInt8], status: Int)] = [
                ("PUT /attachments/\(blob.id.hex) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(token)Connection: close\r\n"
                    + "Content-Type: image/png\r\nUpload-Length: \(blob.bytes.count)\r\nContent-Length: \(blob.bytes.count)\r\n\r\n",
                 blob.bytes, 201),
                ("GET /attachments/\(blob.id.hex)/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n\(token)Connection: close\r\n\r\n", [], 200),
                ("GET /attachments/\(blob.id.hex) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", [], 401),
                ("GET /attachments/nothex HTTP/1.1\r\nHost: 127.0.0.1\r\n\(token)Connection: close\r\n\r\n", [], 400),
                ("GET /no-such-route HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", [], 404),
                ("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", [], 200),
            ]
            for (request, body, status) in asked {
                let line = String(request.prefix { $0 != "\r" })
                let socket = try await RawHTTPConnection(port: server.address.port)
                defer { socket.close() }
                try await socket.send(Array(request.utf8) + body)
                let answer = try await socket.readResponse()
                #expect(answer.status == status, "\(line)")
                #expect(answer.headers["connection"]?.lowercased() == "close", "\(line): \(answer.headers)")
                #expect(try await socket.endsWithoutMoreBytes(), "\(line): the connection stayed open")
            }
            // Not asked: two requests on one connection, neither answer announcing a close.
            let socket = try await RawHTTPConnection(port: server.address.port)
            defer { socket.close() }
            for _ in 0..<2 {
                try await socket.send("GET /attachments/\(blob.id.hex)/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n\(token)\r\n")
                let answer = try await socket.readResponse()
                #expect(answer.status == 200 && answer.headers["connection"] == nil, "\(answer.headers)")
            }
        }
    }

    @Test func aTokenIsRequired() async throws {
        try await Self.withServer { _, client in
            let blob = TestBlob(count: 100, seed: 7)
            let put = try await client.put(blob.id.hex, blob.bytes, auth: false)
            #expect(put.status == 401 && put.errorCode == "unauthenticated")
            #expect(try await client.state(blob.id.hex, auth: false).status == 401)
            #expect(try await client.get(blob.id.hex, auth: false).status == 401)
            let forged = Client(server: client.server, token: "eyJhbGciOiJIUzI1NiJ9.eyJ0ZW5hbnQiOiJhY21lIn0.c2lnbmF0dXJl")
            #expect(try await forged.put(blob.id.hex, blob.bytes).status == 401)
            #expect(try await client.state(blob.id.hex).status == 404)
        }
    }

    @Test func anotherTenantDoesNotSeeTheAttachment() async throws {
        try await Self.withServer { server, client in
            let blob = TestBlob(count: 2_000, seed: 8)
            #expect(try await client.put(blob.id.hex, blob.bytes).status == 201)
            let other = Client(server: server, token: try await server.token(tenant: "globex", uid: "alice"))
            let get = try await other.get(blob.id.hex)
            #expect(get.status == 404 && get.errorCode == "notFound")
            #expect(try await other.state(blob.id.hex).status == 404)
            #expect(try await server.blobs.list(tenant: TenantID("globex")).isEmpty)
        }
    }

    @Test func reuploadingACompleteAttachmentStoresItOnce() async throws {
        try await Self.withServer { server, client in
            let blob = TestBlob(count: 30_000, seed: 9)
            #expect(try await client.put(blob.id.hex, blob.bytes).status == 201)
            let tenant = try TenantID("acme")
            let before = try #require(try await server.blobs.metadata(blob.id, tenant: tenant))
            // Other bytes of the right length: not stored, not even read as a new upload.
            let again = try await client.put(blob.id.hex, Array(repeating: 0, count: 30_000))
            #expect(again.status == 200)
            #expect(again.json["complete"] as? Bool == true && again.int("received") == 30_000)
            #expect(again.json["sha256"] as? String == blob.id.hex)
            #expect(try await server.blobs.metadata(blob.id, tenant: tenant) == before)
            #expect(try await server.blobs.list(tenant: tenant).count == 1)
            #expect(try await server.blobs.partial(blob.id, tenant: tenant) == nil)
            #expect(try await client.get(blob.id.hex).body == blob.bytes)
        }
    }

    @Test func aConcurrentUploadOfTheSameIDGetsOne409() async throws {
        try await Self.withServer { server, client in
            let blob = TestBlob(count: 100_000, seed: 10)
            let socket = try await RawHTTPConnection(port: server.address.port)
            defer { socket.close() }
            try await socket.send(Self.rawHead(blob.id, token: client.token, length: blob.bytes.count, bodyLength: blob.bytes.count))
            try await socket.send(Array(blob.bytes[..<40_000]))
            // The first upload has begun: it holds the id.
            #expect(await eventually { (try? await client.state(blob.id.hex).status) == 200 })

            // While the first upload holds the id, a second one is refused, whatever its offset.
            var refusals = 0
            for offset in [0, 40_000] {
                let second = try await client.put(blob.id.hex, Array(blob.bytes[offset...]), length: blob.bytes.count,
                                                  offset: offset, contentType: "application/pdf")
                #expect(second.status == 409 && second.errorCode == "aborted")
                if second.status == 409 { refusals += 1 }
            }
            #expect(refusals == 2)

            try await socket.send(Array(blob.bytes[40_000...]))
            let first = try await socket.readResponse()
            #expect(first.status == 201)
            #expect(try await client.get(blob.id.hex).body == blob.bytes)
        }
    }

    // MARK: Downloads

    @Test func rangeDownloads() async throws {
        try await Self.withServer { _, client in
            let blob = TestBlob(count: 10_000, seed: 11)
            #expect(try await client.put(blob.id.hex, blob.bytes).status == 201)
            let tail = try await client.get(blob.id.hex, range: "bytes=6000-")
            #expect(tail.status == 206)
            #expect(tail.body == Array(blob.bytes[6_000...]))
            #expect(tail.headers["content-range"] == "bytes 6000-9999/10000")
            #expect(tail.headers["content-length"] == "4000")
            #expect(tail.headers["x-content-sha256"] == blob.id.hex)
            let middle = try await client.get(blob.id.hex, range: "bytes=10-19")
            #expect(middle.status == 206 && middle.body == Array(blob.bytes[10...19]))
            let past = try await client.get(blob.id.hex, range: "bytes=10000-")
            #expect(past.status == 416 && past.headers["content-range"] == "bytes */10000")
            let whole = try await client.get(blob.id.hex)
            #expect(whole.status == 200 && whole.body == blob.bytes && whole.headers["accept-ranges"] == "bytes")
        }
    }

    // MARK: Access

    /// Denies the operations it is given; records what it was asked.
    final class DenyingPolicy: AttachmentAccessPolicy {
        let denied: Set<AttachmentOperation>
        let asked = Mutex<[(AttachmentOperation, AttachmentObject, String)]>([])
        init(_ denied: Set<AttachmentOperation>) { self.denied = denied }

        func decide(_ operation: AttachmentOperation, tenant: TenantID, auth: AuthContext,
                    object: AttachmentObject) async -> AttachmentAccessDecision {
            asked.withLock { $0.append((operation, object, auth.uid)) }
            return denied.contains(operation)
                ? .denied(DocError(.permissionDenied, "secret rule detail at line 7", at: object.path)) : .allowed
        }
    }

    @Test func aDeniedUploadIs403AndStoresNothing() async throws {
        let policy = DenyingPolicy([.upload])
        try await Self.withServer(policy: policy) { server, client in
            let blob = TestBlob(count: 5_000, seed: 12)
            let put = try await client.put(blob.id.hex, blob.bytes, contentType: "image/gif")
            #expect(put.status == 403 && put.errorCode == "permissionDenied")
            let message = try #require(put.errorMessage)
            #expect(message.hasPrefix("Missing or insufficient permissions.") && message.contains(blob.id.hex))
            #expect(!message.contains("secret rule detail"))
            #expect(try await server.blobs.list(tenant: TenantID("acme")).isEmpty)
            let asked = policy.asked.withLock { $0 }
            #expect(asked.count == 1)
            #expect(asked.first?.0 == .upload && asked.first?.1.size == 5_000 && asked.first?.1.contentType == "image/gif")
            #expect(asked.first?.2 == "alice")
        }
    }

    @Test func aDeniedDownloadIs403() async throws {
        try await Self.withServer(policy: DenyingPolicy([.download])) { _, client in
            let blob = TestBlob(count: 5_000, seed: 13)
            #expect(try await client.put(blob.id.hex, blob.bytes).status == 201)
            let get = try await client.get(blob.id.hex)
            #expect(get.status == 403 && get.errorCode == "permissionDenied")
            #expect(get.body.count < 1_000 && get.headers["x-content-sha256"] == nil)
        }
    }

    @Test func theRulesDecideWithTheStorageBlock() async throws {
        try await Self.withServer(policy: nil) { server, client in
            let rules = try RuleSet.parse(source: """
                rules_version = '2';
                service firebase.storage {
                  match /b/{bucket}/o {
                    match /attachments/{id} {
                      allow get: if request.auth.uid == 'alice' && resource.sha256 == id;
                      allow create: if request.resource.contentType.matches('image/.*')
                        && request.resource.size < 8000;
                    }
                  }
                }
                """)
            _ = await server.server.core.replaceRules(with: rules)
            let blob = TestBlob(count: 5_000, seed: 14)
            #expect(try await client.put(blob.id.hex, blob.bytes, contentType: "text/plain").status == 403)
            #expect(try await client.put(TestBlob(count: 9_000).id.hex, TestBlob(count: 9_000).bytes).status == 403)
            #expect(try await client.put(blob.id.hex, blob.bytes, contentType: "image/png").status == 201)
            #expect(try await client.get(blob.id.hex).status == 200)
            let bob = Client(server: server, token: try await server.token(uid: "bob"))
            #expect(try await bob.get(blob.id.hex).status == 403)
        }
    }

    @Test func aServerWithoutAnAttachmentStoreSays501() async throws {
        try await Self.withServer(attachments: false) { _, client in
            let blob = TestBlob(count: 10, seed: 15)
            let put = try await client.put(blob.id.hex, blob.bytes)
            #expect(put.status == 501 && put.errorCode == "unimplemented")
            #expect(try await client.get(blob.id.hex).status == 501)
        }
    }
}
