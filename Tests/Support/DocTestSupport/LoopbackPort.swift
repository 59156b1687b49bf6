public import DocModel
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A TCP port on 127.0.0.1 held bound, not listening, until ``release()``: a connection to it
/// is refused at once, and the kernel gives it to no other socket meanwhile (neither another
/// test's server on port 0 nor an outgoing connection's source port). For a test that points
/// clients at a server it starts later on that port: release just before the start. A port
/// from ``freeLoopbackPort()`` was taken by another test during a long offline phase, and the
/// server's start then failed with "Address already in use".
public final class LoopbackPortReservation: Sendable {
    public let port: Int
    private let descriptor: Mutex<Int32>

    public init() throws(DocError) {
        let (fd, port) = try boundLoopbackSocket()
        self.port = port
        descriptor = Mutex(fd)
    }

    /// Closes the socket, so a server can bind the port. Idempotent.
    public func release() {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    deinit { release() }
}

/// A TCP port on 127.0.0.1 that nothing listens on now: bound by the system, then closed again
/// (for a server to start on, or for a client to find nobody at).
public func freeLoopbackPort() throws(DocError) -> Int {
    let (fd, port) = try boundLoopbackSocket()
    close(fd)
    return port
}

/// A TCP socket bound to 127.0.0.1 on a port the system picks (not inherited by child
/// processes), and that port. The caller listens on it or closes it.
public func boundLoopbackSocket() throws(DocError) -> (descriptor: Int32, port: Int) {
    #if canImport(Darwin)
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #else
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #endif
    guard fd >= 0 else { throw DocError(.internal, "socket() failed: errno \(errno)") }
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else {
        let failure = errno
        close(fd)
        throw DocError(.internal, "bind() on 127.0.0.1 failed: errno \(failure)")
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else {
        let failure = errno
        close(fd)
        throw DocError(.internal, "getsockname() failed: errno \(failure)")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}
