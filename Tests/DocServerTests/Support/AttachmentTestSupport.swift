import DocModel
import DocTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
private func posixSend(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int { Glibc.send(fd, bytes, count, Int32(MSG_NOSIGNAL)) }
private func posixClose(_ fd: Int32) { _ = Glibc.close(fd) }
#elseif canImport(Darwin)
import Darwin
private func posixSend(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int { Darwin.send(fd, bytes, count, 0) }
private func posixClose(_ fd: Int32) { _ = Darwin.close(fd) }
#endif
@testable import DocServer

/// A real server on 127.0.0.1 (system-chosen port) with a ``FileBlobStore`` in a temporary
/// directory, for the attachment endpoints.
final class AttachmentTestServer: Sendable {
    let directory: TempDirectory
    let server: TestServer
    let blobs: FileBlobStore
    let http: DocServerHTTP
    let address: ServerAddress
    let secret = Array("attachment-test-secret-0123456789abcdef".utf8)
    private let task: Task<Void, any Error>

    /// The base URL, `http://127.0.0.1:PORT`.
    var url: String { address.url }

    init(maxSize: Int64 = 1 << 20, policy: (any AttachmentAccessPolicy)? = AllowAllAttachmentPolicy(),
         attachments: Bool = true) async throws {
        directory = TempDirectory()
        let blobs = try FileBlobStore(root: directory.path + "/attachments", maxSize: maxSize)
        self.blobs = blobs
        var configuration = ServerConfiguration()
        configuration.attachments = attachments ? AttachmentSettings(store: blobs, policy: policy, downloadChunkBytes: 4096) : nil
        server = TestServer(configuration: configuration)
        http = DocServerHTTP(
            core: server.core, verifier: try await TokenVerifier(secret: secret),
            settings: HTTPServerSettings(port: 0, shutdownGrace: .seconds(2)), logger: .discarding)
        let (ready, continuation) = AsyncStream<ServerAddress>.makeStream()
        let http = self.http
        task = Task {
            defer { continuation.finish() }
            try await http.run(handleSignals: false) { address in continuation.yield(address) }
        }
        var iterator = ready.makeAsyncIterator()
        guard let address = await iterator.next() else {
            _ = try await task.value
            throw DocError(.unavailable, "the test server did not start")
        }
        self.address = address
    }

    func stop() async {
        await http.shutdown()
        _ = try? await task.value
        directory.remove()
    }

    func token(tenant: String = "acme", uid: String = "alice") async throws -> String {
        try await TokenMinter(secret: secret).mint(tenant: tenant, uid: uid)
    }
}

/// An HTTP answer: status, headers (lower-cased names) and body.
struct HTTPAnswer {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    /// The body as a JSON object (empty when it is not one).
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
    /// `error.code` of an error body.
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
    var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
    func int(_ key: String) -> Int64? { (json[key] as? NSNumber)?.int64Value }
}

/// Requests through URLSession (FoundationNetworking on Linux): a real HTTP client.
enum HTTPClient {
    static func send(_ method: String, _ url: String, headers: [String: String] = [:], body: [UInt8]? = nil) async throws -> HTTPAnswer {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body { request.httpBody = Data(body) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return HTTPAnswer(status: http.statusCode, headers: fields, body: Array(data))
    }
}

/// A TCP connection spoken by hand, for what an HTTP client library will not do: send half a
/// body and cut the connection, or hold a request open. Blocking calls run on threads of their
/// own (``onOwnThread(_:)``): a read waits for the server, whose handlers need the cooperative
/// pool, and Dispatch's global queue is sized to the cores as well (it adds a thread for a
/// blocked one only once its monitor notices).
final class RawHTTPConnection: Sendable {
    private let fd: Int32

    init(port: Int) async throws {
        fd = try await Self.blocking { () throws -> Int32 in
            #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
            #endif
            guard fd >= 0 else { throw DocError(.unavailable, "socket failed") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard result == 0 else { posixClose(fd); throw DocError(.unavailable, "connect failed: \(errno)") }
            return fd
        }
    }

    /// Writes `bytes` whole.
    func send(_ bytes: [UInt8]) async throws {
        let fd = self.fd
        try await Self.blocking { () throws in
            var done = 0
            while done < bytes.count {
                let n = bytes[done...].withUnsafeBytes { posixSend(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { throw DocError(.unavailable, "send failed: \(errno)") }
                done += n
            }
        }
    }

    func send(_ text: String) async throws { try await send(Array(text.utf8)) }

    /// Reads one response (headers, then a `Content-Length` body).
    func readResponse() async throws -> HTTPAnswer {
        let fd = self.fd
        return try await Self.blocking { () throws -> HTTPAnswer in
            var data: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            func fill() throws {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw DocError(.unavailable, "the connection closed") }
                data += buffer[0..<n]
            }
            let separator = Array("\r\n\r\n".utf8)
            var headerEnd: Int?
            while headerEnd == nil {
                try fill()
                if data.count >= 4 {
                    headerEnd = (0...(data.count - 4)).first { Array(data[$0..<$0 + 4]) == separator }
                }
            }
            let head = String(decoding: data[0..<headerEnd!], as: UTF8.self).components(separatedBy: "\r\n")
            let status = Int(head[0].split(separator: " ")[1])!
            var headers: [String: String] = [:]
            for line in head.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            let bodyStart = headerEnd! + 4
            while data.count < bodyStart + length { try fill() }
            return HTTPAnswer(status: status, headers: headers, body: Array(data[bodyStart..<bodyStart + length]))
        }
    }

    /// Whether the server ends the connection (a read sees its end) within `seconds` without
    /// sending another byte; false when a byte comes first or nothing comes in time.
    func endsWithoutMoreBytes(within seconds: Int = 10) async throws -> Bool {
        let fd = self.fd
        return try await Self.blocking { () -> Bool in
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, 0) == 0
        }
    }

    /// Closes the socket (a cut connection for the server).
    func close() {
        posixClose(fd)
    }

    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await onOwnThread(body)
    }
}

/// Attachment content for tests: deterministic bytes and their id.
struct TestBlob {
    let bytes: [UInt8]
    var id: AttachmentID { BlobDigest.id(of: bytes) }

    init(count: Int, seed: UInt64 = 1) {
        var random = SplitMix64(seed: seed)
        bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }
}
