public import DocModel
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
