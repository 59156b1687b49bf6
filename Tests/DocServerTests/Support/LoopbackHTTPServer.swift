import DocModel
import DocTestSupport
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimal HTTP/1.1 server on 127.0.0.1 (a port the system picks) for stand-ins of external
/// services: each request head is read, `handler` says what to answer, and the connection is
/// closed (`Connection: close`).
///
/// Served by threads of its own with blocking sockets: nothing of it runs on Swift's
/// cooperative pool, which the code under test and every other test in the process share (two
/// threads on these machines). A stand-in served from that pool answers late whenever other
/// tests hold it, and a client with a timeout then fails for a reason the real service would
/// never give it.
///
/// ``stop()`` returns at once; from then on connections to the port are refused (Linux: the
/// listening socket is shut down, which also wakes the thread blocked in `accept`).
final class LoopbackHTTPServer: Sendable {
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body: [UInt8] = []
    }

    /// What to answer to a request (its method and target, e.g. `GET` and `/jwks.json`).
    typealias Handler = @Sendable (_ method: String, _ target: String) -> Answer

    let port: Int
    /// The listening socket; -1 once the accepting thread has closed it (only that thread
    /// closes it, so ``stop()`` never shuts down a descriptor number reused meanwhile).
    private let listener: Mutex<Int32>
    private let stopping = Atomic<Bool>(false)

    init(_ handler: @escaping Handler) throws(DocError) {
        let (fd, port) = try Self.listenOnLoopback()
        self.port = port
        listener = Mutex(fd)
        Thread.detachNewThread { [self] in
            acceptConnections(fd, handler)
            listener.withLock { fd in
                close(fd)
                fd = -1
            }
        }
    }

    /// Stops accepting connections. Safe to call more than once.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        listener.withLock { fd in
            if fd >= 0 { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptConnections(_ fd: Int32, _ handler: @escaping Handler) {
        while !stopping.load(ordering: .relaxed) {
            let client = accept(fd, nil, nil)
            guard client >= 0 else {
                if stopping.load(ordering: .relaxed) { return }
                switch errno {
                case EINTR, ECONNABORTED: continue
                // Short of descriptors or memory for a moment in a full test run: try again.
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: usleep(10_000)
                default: return
                }
                continue
            }
            // A thread per connection: a client that never sends its request holds up no other.
            Thread.detachNewThread {
                Self.answer(client, handler)
                close(client)
            }
        }
    }

    /// Reads the request head (the requests served have no body), writes the answer, then
    /// half-closes and reads to the client's end: closing with unread bytes would send a reset,
    /// which can cost the client the end of the answer.
    private static func answer(_ client: Int32, _ handler: Handler) {
        // A liveness bound for a client that stops talking, not a timing of the tests.
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        _ = setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !endsHead(head) {
            let count = recv(client, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0, head.count < 65_536 else { return }
            head += buffer[..<count]
        }
        let requestLine = String(decoding: head.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self).split(separator: " ")
        guard requestLine.count == 3 else { return }
        let reply = handler(String(requestLine[0]), String(requestLine[1]))
        var text = "HTTP/1.1 \(reply.status) \(reason(reply.status))\r\n"
        for (name, value) in reply.headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        text += "Content-Length: \(reply.body.count)\r\nConnection: close\r\n\r\n"
        guard sendAll(client, Array(text.utf8) + reply.body) else { return }
        _ = shutdown(client, Int32(SHUT_WR))
        while true {
            let count = recv(client, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
        }
    }

    /// Whether `head` holds a whole request head (it ends with an empty line).
    private static func endsHead(_ head: [UInt8]) -> Bool {
        head.count >= 4 && (0...(head.count - 4)).contains { head[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) }
    }

    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { pointer in
                #if canImport(Glibc)
                send(fd, pointer.baseAddress, pointer.count, Int32(MSG_NOSIGNAL))
                #else
                send(fd, pointer.baseAddress, pointer.count, 0)
                #endif
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 404: "Not Found"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status \(status)"
        }
    }

    private static func listenOnLoopback() throws(DocError) -> (descriptor: Int32, port: Int) {
        let (fd, port) = try boundLoopbackSocket()
        guard listen(fd, 64) == 0 else {
            let failure = errno
            close(fd)
            throw DocError(.internal, "cannot listen on 127.0.0.1: errno \(failure)")
        }
        return (fd, port)
    }
}
