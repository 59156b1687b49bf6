import Testing
@testable import DocModel
import DocTestTraits

@Suite("Value order and equality", .cpuBound)
struct ValueOrderTests {
    static func ts(_ s: Int64, _ n: Int32 = 0) -> Value { .timestamp(try! Timestamp(seconds: s, nanos: n)) }
    static func key(_ p: String) -> Value { .reference(try! DocumentKey(p)) }
    static func geo(_ a: Double, _ b: Double) -> Value { .geoPoint(try! GeoPoint(latitude: a, longitude: b)) }
    static func attachment(_ byte: UInt8) -> Value { .attachment(AttachmentID(digest: [UInt8](repeating: byte, count: 32))) }

    /// Groups in ascending order; values inside a group compare equal.
    static let orderedGroups: [[Value]] = [
        [.null],
        [false], [true],
        [.double(.nan), .double(-.nan)],
        [.double(-.infinity)],
        [.integer(.min)],
        [-1.5],
        [.integer(-1), .double(-1.0)],
        [.integer(0), .double(0.0), .double(-0.0)],
        [.double(.leastNonzeroMagnitude)],
        [.integer(1), .double(1.0)],
        [1.5],
        [.integer(9_007_199_254_740_992), .double(9_007_199_254_740_992)],
        [.integer(9_007_199_254_740_993)],
        [.integer(.max)],
        [.double(9.223372036854775807e18)],
        [.double(.infinity)],
        [ts(-62_135_596_800)], [ts(0)], [ts(0, 1)], [ts(1)],
        [.pendingServerTimestamp(localWriteTime: try! Timestamp(seconds: 5), previous: nil)],
        [.pendingServerTimestamp(localWriteTime: try! Timestamp(seconds: 6), previous: 3)],
        [""], ["\u{0}"], ["A"], ["a"], ["ab"], ["b"], ["é"], ["\u{FFFF}"], ["😀"],
        [.bytes([])], [.bytes([0])], [.bytes([0, 0])], [.bytes([1])], [.bytes([255])],
        [key("a/a")], [key("a/a/b/b")], [key("a/b")], [key("b/a")],
        [attachment(0)], [attachment(0x0f)], [attachment(0xa0)], [attachment(0xff)],
        [geo(-90, 0)], [geo(0, -180)], [geo(0, 0)], [geo(0, 1)], [geo(90, 180)],
        [[]], [[.null]], [[1]], [[1, 2], [1.0, 2.0]], [[1, 3]], [[2]], [["a"]],
        [[:]], [["a": 1], ["a": 1.0]], [["a": 1, "b": 1]], [["a": 2]], [["b": 0]],
    ]

    @Test func everyPairOrdersAsListed() {
        let flat = Self.orderedGroups.enumerated().flatMap { i, g in g.map { (i, $0) } }
        for (i, a) in flat {
            for (j, b) in flat {
                let expected = i == j ? 0 : (i < j ? -1 : 1)
                #expect(Value.compare(a, b) == expected, "\(a) vs \(b)")
                #expect((a == b) == (i == j), "\(a) == \(b)")
                if a == b { #expect(a.hashValue == b.hashValue, "hash \(a) \(b)") }
            }
        }
    }

    @Test func identityIsStricterThanEquality() {
        #expect(Value.integer(1) == .double(1.0))
        #expect(!Value.integer(1).isIdentical(to: .double(1.0)))
        #expect(!Value.double(0.0).isIdentical(to: .double(-0.0)))
        #expect(Value.double(.nan).isIdentical(to: .double(.nan)))
        #expect(Value.map(["a": [1, "x"]]).isIdentical(to: ["a": [1, "x"]]))
        #expect(!Value.map(["a": [1, "x"]]).isIdentical(to: ["a": [1, "y"]]))
        #expect(ObjectValue(["a": 1]) != ObjectValue(["a": 1.0]))
    }

    @Test func integerDoubleComparisonIsExactForLargeValues() {
        // 2^53 + 1 is not representable as a double; a naive conversion would call them equal.
        #expect(Value.integer(9_007_199_254_740_993) > .double(9_007_199_254_740_992))
        #expect(Value.integer(.max) < .double(9.223372036854775807e18))
        #expect(Value.integer(.min) == .double(-9.223372036854775808e18))
        #expect(Value.integer(-2) < .double(-1.5))
        #expect(Value.integer(-1) > .double(-1.5))
    }

    @Test func depthAndTypeNames() {
        #expect(Value.integer(1).depth == 0)
        #expect(Value.map(["a": ["b": [1]]]).depth == 3)
        #expect(Value.pendingServerTimestamp(localWriteTime: try! Timestamp(seconds: 1), previous: nil).typeName == "serverTimestamp")
    }

    @Test func chainedServerTimestampKeepsOriginalPreviousValue() throws {
        let first = Value.pendingServerTimestamp(localWriteTime: try Timestamp(seconds: 1), previous: "old")
        let second = Value.pendingServerTimestamp(localWriteTime: try Timestamp(seconds: 2), previous: first)
        #expect(second.serverTimestampPreviousValue == "old")
        #expect(second.serverTimestampLocalWriteTime == (try Timestamp(seconds: 2)))
    }
}

@Suite("Canonical strings", .cpuBound)
struct CanonicalStringTests {
    @Test func canonicalStringsDistinguishIdentity() {
        #expect(Value.integer(1).canonicalString == "1")
        #expect(Value.double(1).canonicalString == "1.0")
        #expect(Value.double(-0.0).canonicalString == "-0.0")
        #expect(Value.double(.nan).canonicalString == "NaN")
        #expect(Value.map(["b": 1, "a": ["x", .null]]).canonicalString == "{\"a\":[\"x\",null],\"b\":1}")
        #expect(Value.bytes([0, 255]).canonicalString == "bytes(00ff)")
    }
}
