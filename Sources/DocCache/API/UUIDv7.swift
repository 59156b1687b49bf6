import Synchronization
import Foundation

/// Document ids made on the device: UUIDv7 (RFC 9562), lowercase. The first 48 bits are the
/// Unix time in milliseconds and the next 12 a counter within the millisecond, so ids made by
/// one process sort in creation order; the remaining 62 bits are random.
package enum UUIDv7 {
    private struct State { var lastMillis: UInt64 = 0; var counter: UInt16 = 0 }
    private static let state = Mutex(State())

    package static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        let (millis, counter) = state.withLock { s -> (UInt64, UInt16) in
            if now > s.lastMillis {
                s.lastMillis = now
                s.counter = UInt16.random(in: 0..<0x400, using: &generator)  // leave room to count up
            } else if s.counter < 0xFFF {
                s.counter += 1
            } else {
                s.lastMillis += 1          // counter exhausted: borrow the next millisecond
                s.counter = 0
            }
            return (s.lastMillis, s.counter)
        }
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<6 { bytes[i] = UInt8(truncatingIfNeeded: millis >> (8 * (5 - UInt64(i)))) }
        bytes[6] = 0x70 | UInt8(counter >> 8)
        bytes[7] = UInt8(truncatingIfNeeded: counter)
        let random = generator.next() as UInt64
        for i in 8..<16 { bytes[i] = UInt8(truncatingIfNeeded: random >> (8 * UInt64(i - 8))) }
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        let hex = bytes.map { b -> String in
            let s = String(b, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined()
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-"
            + String(c[16..<20]) + "-" + String(c[20..<32])
    }
}
