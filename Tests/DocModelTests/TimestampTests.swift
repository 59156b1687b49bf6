import Testing
@testable import DocModel

/// The text form of timestamps, including those outside 0001 … 9999 that JSON and storage can
/// hold (document data refuses them, ``DocumentLimits``): formatting one must never trap.
@Suite struct TimestampTests {
    @Test func rfc3339OfTheValidRangeAndAroundTheEpoch() throws {
        #expect(try Timestamp(seconds: 0).rfc3339 == "1970-01-01T00:00:00Z")
        #expect(try Timestamp(seconds: -1, nanos: 500_000_000).rfc3339 == "1969-12-31T23:59:59.500Z")
        #expect(try Timestamp(seconds: -86_400).rfc3339 == "1969-12-31T00:00:00Z")
        #expect(try Timestamp(seconds: Timestamp.minSeconds).rfc3339 == "0001-01-01T00:00:00Z")
        #expect(try Timestamp(seconds: Timestamp.maxSeconds, nanos: 999_999_999).rfc3339 == "9999-12-31T23:59:59.999999999Z")
        for seconds: Int64 in [Timestamp.minSeconds, -1, 0, 1_714_564_800, Timestamp.maxSeconds] {
            let t = try Timestamp(seconds: seconds, nanos: 250_000_000)
            #expect(try Timestamp(rfc3339: t.rfc3339) == t)
        }
    }

    @Test func timestampsOutsideTheRangeFormatWithoutTrapping() throws {
        for seconds in [Int64.min, Int64.min + 1, Int64.min + 55_807, Timestamp.minSeconds - 1, Timestamp.maxSeconds + 1, Int64.max] {
            let t = Timestamp(uncheckedSeconds: seconds, nanos: 1)
            #expect(!t.isInValidRange)
            #expect(t.description.hasSuffix(".000000001Z"), "\(t.description)")
            #expect(t.description == t.rfc3339)
        }
        #expect(Timestamp(uncheckedSeconds: Timestamp.maxSeconds + 1, nanos: 0).rfc3339 == "10000-01-01T00:00:00Z")
        #expect(try Timestamp(seconds: Timestamp.maxSeconds).isInValidRange)
    }
}
