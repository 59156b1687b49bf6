#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The listening socket and the open connections of a test TCP proxy on 127.0.0.1 (the
/// cutting proxy, the balancing proxy): accepting until stopped, admitting a connection's
/// link, retiring it when both pumps ended, and stopping everything at once.
final class ProxyLinks: @unchecked Sendable {
    // The listening socket is written once in init and closed once in stop(); everything that
    // changes is behind the Mutex.
    let port: Int
    private let listener: Int32
    private let state = Mutex<(stopped: Bool, links: [ObjectIdentifier: CuttingProxy.Link])>((false, [:]))

    init(backlog: Int32) throws {
        (listener, port) = try listenOnLoopback(backlog: backlog)
    }

    /// The next client connection, or nil once the proxy stopped (or accepting failed).
    func accept() -> Int32? {
        while true {
            let client = Glibc.accept(listener, nil, nil)
            if client >= 0 { return client }
            if state.withLock({ $0.stopped }) { return nil }
            if errno == EINTR || errno == ECONNABORTED { continue }
            return nil
        }
    }

    /// Records an open link; false (and the link is closed) when the proxy has stopped.
    func admit(_ link: CuttingProxy.Link) -> Bool {
        let admitted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.links[ObjectIdentifier(link)] = link
            return true
        }
        if !admitted { link.cut(); link.finish(); link.finish() }
        return admitted
    }

    /// One pump of `link` ended; the last one forgets the link.
    func retire(_ link: CuttingProxy.Link) {
        if link.finish() { state.withLock { _ = $0.links.removeValue(forKey: ObjectIdentifier(link)) } }
    }

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
}
