public import DocModel
public import Foundation

// A `Date` is a Double of seconds since 2001-01-01; a `Timestamp` is whole seconds and
// nanoseconds since 1970. The conversions split the Double exactly (its integral part, then
// its fraction, which subtraction from the integral part keeps exact) and round the fraction
// to the nearest nanosecond:
//
// - Date → Timestamp → Date gives back the same Date whenever the Date's resolution is
//   coarser than a nanosecond, which holds for every date more than about 97 days from
//   2001-01-01 (a Double's 53 bits at today's dates resolve about 119 ns). Closer to that
//   epoch, the bits below a nanosecond are rounded away (at most half a nanosecond).
// - Timestamp → Date → Timestamp keeps what the Date can hold: about 0.1 µs for today's dates;
//   use a `Timestamp` property where nanoseconds matter.

/// Seconds from 1970-01-01 to 2001-01-01, the reference date of `Date`.
private let referenceDateOffset: Int64 = 978_307_200

extension Timestamp {
    /// The time of `date`, to the nearest nanosecond.
    ///
    /// - Throws: `invalidArgument` when the date is not finite or outside 0001-01-01 …
    ///   9999-12-31, the range a timestamp holds.
    public init(date: Date) throws(DocError) {
        let interval = date.timeIntervalSinceReferenceDate
        // The range check is on the Double, before any conversion to an integer can trap.
        let lowest = Double(Timestamp.minSeconds - referenceDateOffset)
        let highest = Double(Timestamp.maxSeconds - referenceDateOffset + 1)
        guard interval.isFinite, interval >= lowest, interval < highest else {
            throw DocError(.invalidArgument, "date \(date) is outside the timestamp range 0001-01-01 … 9999-12-31")
        }
        let whole = interval.rounded(.down)
        var seconds = Int64(whole) + referenceDateOffset
        var nanos = Int64(((interval - whole) * 1_000_000_000).rounded())
        if nanos == 1_000_000_000 {
            seconds += 1
            nanos = 0
        }
        try self.init(seconds: seconds, nanos: Int32(nanos))
    }

    /// The timestamp as a `Date` (its resolution: about 0.1 µs for today's dates). Never traps,
    /// also for a timestamp outside the valid range read from a stored or received value.
    public var dateValue: Date {
        Date(timeIntervalSinceReferenceDate: Double(seconds) - Double(referenceDateOffset) + Double(nanos) / 1_000_000_000)
    }
}
