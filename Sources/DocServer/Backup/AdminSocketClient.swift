#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import DocModel

/// The client side of ``AdminSocketServer``: one HTTP/1.1 request over the Unix domain socket
/// of a running server, its answer's body streamed to a file. Blocking (a command-line tool's
/// call); a server that stops sending for ``receiveTimeoutSeconds`` is an error.
enum AdminSocketClient {
    static let receiveTimeoutSeconds = 60

    /// Connects to the socket at `path`.
    /// - Throws: `unavailable` when nothing listens there (no socket, a stale one, refused).
    static func connect(_ path: String) throws(DocError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let bytes = Array(path.utf8)
        guard bytes.count < capacity else {
            throw DocError(.unavailable, "the admin socket path \(path) is longer than the system allows (\(capacity - 1) bytes)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        #if canImport(Darwin)
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw BackupFiles.failure("open a socket for", path) }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let code = errno
            POSIXFile.close(fd)
            throw DocError(.unavailable, "cannot connect to \(path): \(String(cString: strerror(code)))")
        }
        return fd
    }

    /// `GET target` on `socket` (connected to `socketPath`, closed here); the body of a 200
    /// answer is written to `fd` (the file at `filePath`). Returns the bytes written.
    /// - Throws: `dataLoss` when the answer is cut or malformed, `unavailable` for something
    ///   that is not a doccache admin socket or a 503, the server's own message for any other
    ///   status, the file's error when writing fails.
    static func get(_ target: String, on socket: Int32, socketPath: String, into fd: Int32, filePath: String) throws(DocError) -> Int64 {
        defer { POSIXFile.close(socket) }
        let request = "GET \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        try BackupFiles.write(Array(request.utf8), to: socket, path: socketPath)
        var reader = SocketReader(fd: socket, path: socketPath)
        let statusLine = try reader.line()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw DocError(.unavailable, "\(socketPath) did not answer as a doccache server's admin socket (\(statusLine.prefix(80)))")
        }
        var headers: [String: String] = [:]
        while true {
            let line = try reader.line()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingSpaces
        }
        let chunked = headers["transfer-encoding"]?.lowercased().contains("chunked") == true
        let length = headers["content-length"].flatMap { Int64($0) }
        guard status == 200 else {
            var body: [UInt8] = []
            try reader.body(chunked: chunked, length: length) { part throws(DocError) in
                if body.count < 4096 { body += part.prefix(4096 - body.count) }
            }
            let message = String(decoding: body, as: UTF8.self).trimmingSpaces
            throw DocError(status == 503 ? .unavailable : .internal,
                           "the server refused the backup (HTTP \(status)): \(message.isEmpty ? "no reason given" : message)")
        }
        var written: Int64 = 0
        try reader.body(chunked: chunked, length: length) { part throws(DocError) in
            try BackupFiles.write(part, to: fd, path: filePath)
            written += Int64(part.count)
        }
        return written
    }

    private static func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
        #if canImport(Darwin)
        Darwin.connect(fd, address, length)
        #elseif canImport(Musl)
        Musl.connect(fd, address, length)
        #else
        Glibc.connect(fd, address, length)
        #endif
    }

    /// Buffered reads of an HTTP/1.1 answer: lines, then a body (chunked, sized, or to the
    /// end of the connection).
    struct SocketReader {
        let fd: Int32
        let path: String
        private var buffer: [UInt8] = []
        private var position = 0

        init(fd: Int32, path: String) {
            self.fd = fd
            self.path = path
        }

        /// More bytes from the socket; false at its end.
        private mutating func fill() throws(DocError) -> Bool {
            let more: [UInt8]
            do {
                more = try BackupFiles.read(fd, count: 1 << 20, path: path)
            } catch {
                throw DocError(.dataLoss, "the server stopped sending the backup (\(error.message))")
            }
            if more.isEmpty { return false }
            buffer.removeSubrange(0..<position)
            position = 0
            buffer += more
            return true
        }

        /// One line without its CRLF.
        mutating func line() throws(DocError) -> String {
            while true {
                if let end = buffer[position...].firstIndex(of: UInt8(ascii: "\n")) {
                    var line = buffer[position..<end]
                    if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                    position = end + 1
                    return String(decoding: line, as: UTF8.self)
                }
                guard buffer.count - position < 64 << 10 else { throw DocError(.dataLoss, "\(path) sent an overlong line") }
                guard try fill() else { throw DocError(.dataLoss, "the server closed the connection before its answer was complete") }
            }
        }

        /// Up to `limit` bytes (at least one, unless the connection ended).
        private mutating func some(_ limit: Int) throws(DocError) -> [UInt8] {
            if position == buffer.count { guard try fill() else { return [] } }
            let end = min(buffer.count, position + limit)
            defer { position = end }
            return Array(buffer[position..<end])
        }

        /// Feeds the body to `sink` as it arrives.
        mutating func body(chunked: Bool, length: Int64?, _ sink: ([UInt8]) throws(DocError) -> Void) throws(DocError) {
            if chunked {
                while true {
                    let sizeLine = try line()
                    let digits = sizeLine.split(separator: ";").first.map { $0.trimmingSpaces } ?? ""
                    guard let size = Int(digits, radix: 16), size >= 0 else {
                        throw DocError(.dataLoss, "the server sent a malformed chunk (\(sizeLine.prefix(40)))")
                    }
                    if size == 0 {
                        while try !line().isEmpty {}   // trailer fields, then the blank line
                        return
                    }
                    var remaining = size
                    while remaining > 0 {
                        let part = try some(remaining)
                        guard !part.isEmpty else { throw DocError(.dataLoss, "the server closed the connection in the middle of the backup") }
                        try sink(part)
                        remaining -= part.count
                    }
                    _ = try line()   // the CRLF after the chunk
                }
            } else if let length {
                var remaining = length
                while remaining > 0 {
                    let part = try some(Int(min(remaining, 1 << 20)))
                    guard !part.isEmpty else { throw DocError(.dataLoss, "the server closed the connection in the middle of the backup") }
                    try sink(part)
                    remaining -= Int64(part.count)
                }
            } else {
                while true {
                    let part = try some(1 << 20)
                    if part.isEmpty { return }
                    try sink(part)
                }
            }
        }
    }
}
