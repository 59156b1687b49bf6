import DocModel
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A TCP load balancer on 127.0.0.1 in front of several server instances, as a deployment
/// puts one in front of `docctl serve` processes: each new connection goes to the next
/// backend in turn that accepts it (a killed instance refuses, so its clients land on another
/// one when they reconnect). Bytes pass untouched both ways; when either side closes, both
/// do (a killed backend drops its clients' connections).
final class BalancingProxy: Sendable {
    private let links: ProxyLinks
    private let backends: [Int]
    /// Which backend the next connection tries first.
    private let next = Mutex(0)
    /// Connections made to each backend port.
    private let perBackend = Mutex<[Int: Int]>([:])

    init(backendPorts: [Int]) throws {
        backends = backendPorts
        links = try ProxyLinks(backlog: 128)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    var port: Int { links.port }

    /// How many connections went to each backend port.
    var connections: [Int: Int] { perBackend.withLock { $0 } }

    /// Stops accepting and closes every open connection. Safe to call more than once.
    func stop() { links.stop() }

    private func acceptLoop() {
        while let client = links.accept() {
            guard let (server, backend) = connectToNextBackend() else {
                close(client)
                continue
            }
            for fd in [client, server] {
                var yes: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            }
            let link = CuttingProxy.Link(client: client, server: server)
            guard links.admit(link) else { return }
            perBackend.withLock { $0[backend, default: 0] += 1 }
            for (source, destination) in [(link.client, link.server), (link.server, link.client)] {
                Thread.detachNewThread { [self] in
                    link.pump(from: source, to: destination) { bytes, _ in .forward(bytes) }
                    links.retire(link)
                }
            }
        }
    }

    /// A connected socket to the next backend that accepts, trying each once.
    private func connectToNextBackend() -> (Int32, Int)? {
        let start = next.withLock { next -> Int in
            defer { next += 1 }
            return next
        }
        for offset in 0..<backends.count {
            let backend = backends[(start + offset) % backends.count]
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard server >= 0 else { return nil }
            var address = loopbackAddress(port: UInt16(backend))
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
            if connected { return (server, backend) }
            close(server)
        }
        return nil
    }
}
