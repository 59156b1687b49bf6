#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// The server's notion of "now": microseconds since the Unix epoch. Commit versions are
/// `max(now, last + 1)`, so they stay strictly increasing even if the clock steps back.
public struct ServerClock: Sendable {
    private let read: @Sendable () -> Int64

    /// A clock that calls `read` for the current time in microseconds.
    public init(_ read: @escaping @Sendable () -> Int64) { self.read = read }

    /// The current time in microseconds since the epoch.
    public func nowMicros() -> Int64 { read() }

    /// The system's real-time clock.
    public static let system = ServerClock {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1_000
    }
}
