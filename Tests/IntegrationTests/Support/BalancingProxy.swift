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
final class BalancingProxy: @unchecked Sendable {
    // The listening socket is written once in init and closed once in stop(); everything
    // that changes is behind Mutexes.
    let port: Int
    private let backends: [Int]
    private let listener: Int32
    private let state = Mutex<(stopped: Bool, next: Int, links: [ObjectIdentifier: CuttingProxy.Link])>((false, 0, [:]))
    /// Connections made to each backend port.
    private let perBackend = Mutex<[Int: Int]>([:])

    init(backendPorts: [Int]) throws {
        backends = backendPorts
        (listener, port) = try listenOnLoopback(backlog: 128)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// How many connections went to each backend port.
    var connections: [Int: Int] { perBackend.withLock { $0 } }

    /// Stops accepting and closes every open connection. Safe to call more than once.
    func stop() {
        let links = state.withLock { state -> [CuttingProxy.Link]? in
            guard !state.stopped else { return nil }
            state.stopped = true
            return Array(state.links.values)
        }
        guard let links else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for link in links { link.cut() }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if state.withLock({ $0.stopped }) { return }
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            guard let (server, backend) = connectToNextBackend() else {
                close(client)
                continue
            }
            for fd in [client, server] {
                var yes: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            }
            let link = CuttingProxy.Link(client: client, server: server)
            let admitted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.links[ObjectIdentifier(link)] = link
                return true
            }
            guard admitted else { link.cut(); link.finish(); link.finish(); return }
            perBackend.withLock { $0[backend, default: 0] += 1 }
            for (source, destination) in [(link.client, link.server), (link.server, link.client)] {
                Thread.detachNewThread { [self] in
                    link.pump(from: source, to: destination) { bytes, _ in .forward(bytes) }
                    if link.finish() { state.withLock { _ = $0.links.removeValue(forKey: ObjectIdentifier(link)) } }
                }
            }
        }
    }

    /// A connected socket to the next backend that accepts, trying each once.
    private func connectToNextBackend() -> (Int32, Int)? {
        let start = state.withLock { state -> Int in
            defer { state.next += 1 }
            return state.next
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
