import DocModel
#if canImport(Glibc)
import Glibc
#endif

/// A listening TCP socket on 127.0.0.1 with a port picked by the system, for the tests' own
/// small servers (the cutting proxy, a server that closes without answering).
/// Returns the socket descriptor and the port.
func listenOnLoopback(backlog: Int32) throws -> (descriptor: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw DocError(.internal, "socket() failed") }
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    var address = loopbackAddress(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, listen(fd, backlog) == 0 else {
        close(fd)
        throw DocError(.internal, "cannot listen on 127.0.0.1")
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// The IPv4 address 127.0.0.1:`port`.
func loopbackAddress(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// Pairs an accepted proxy `client` with a new connection to 127.0.0.1:`port`, both with
/// `TCP_NODELAY`; the server side's descriptor, or nil (the client is closed then) when the
/// target cannot be reached.
func connectProxied(_ client: Int32, toLoopbackPort port: Int) -> Int32? {
    let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = loopbackAddress(port: UInt16(port))
    let connected = server >= 0 && withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
    guard connected else {
        close(client)
        if server >= 0 { close(server) }
        return nil
    }
    for fd in [client, server] {
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    }
    return server
}
