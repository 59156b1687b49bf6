import DocModel
import DocTestSupport
import DocTestTraits
import Testing

@Suite("Aggregations: count, sum, average over documents", .cpuBound)
struct AggregationTests {
    static func data(_ fields: [String: Value]) -> ObjectValue { ObjectValue(fields) }

    @Test("sum stays an integer while exact, turns double on a double or an overflow; non-numbers are skipped")
    func semantics() throws {
        let fields = [try AggregateField.count(), try AggregateField.sum("n"), try AggregateField.average("n"),
                      try AggregateField.sum("x", alias: "xs"), try AggregateField.average("missing")]
        var accumulator = AggregateAccumulator(fields)
        for value: Value in [.integer(2), .integer(3), .string("7"), .null, .boolean(true)] {
            accumulator.add(Self.data(["n": value, "x": .integer(Int64.max)]))
        }
        let result = accumulator.result
        #expect(result["count"] == .integer(5))
        #expect(result["sum_n"] == .integer(5))
        #expect(result["average_n"] == .double(2.5))
        #expect(result["xs"] == .double(Double(Int64.max) * 5), "an integer overflow gives a double")
        #expect(result["average_missing"] == .null)

        var mixed = AggregateAccumulator([try AggregateField.sum("n")])
        mixed.add(Self.data(["n": .integer(1)]))
        mixed.add(Self.data(["n": .double(0.5)]))
        #expect(mixed.result["sum_n"] == .double(1.5))
        #expect(AggregateAccumulator([try AggregateField.sum("n")]).result["sum_n"] == .integer(0))
    }

    @Test("nested fields by dotted path; aliases checked")
    func pathsAndAliases() throws {
        var accumulator = AggregateAccumulator([try AggregateField.sum("totals.net", alias: "net")])
        accumulator.add(Self.data(["totals": .map(["net": .integer(40)])]))
        accumulator.add(Self.data(["totals": .map(["net": .integer(2)])]))
        #expect(accumulator.result["net"] == .integer(42))
        #expect(throws: DocError.self) { try AggregateField.validate([]) }
        #expect(throws: DocError.self) { try AggregateField.validate([try .count(), try .count()]) }
        #expect(throws: DocError.self) { try AggregateField.validate((0..<6).map { try .sum("n", alias: "a\($0)") }) }
        #expect(throws: DocError.self) { try AggregateField(.sum, field: nil, alias: "s") }
        #expect(throws: DocError.self) { try AggregateField.count(alias: "") }
    }

    @Test("the accumulator equals a plain computation over generated documents")
    func generated() throws {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<50 {
            var accumulator = AggregateAccumulator([try .count(), try .sum("v"), try .average("v")])
            var ints: [Int64] = []
            var count = 0
            for _ in 0..<Int.random(in: 0...40, using: &rng) {
                count += 1
                if Bool.random(using: &rng) {
                    let n = Int64.random(in: -1_000...1_000, using: &rng)
                    ints.append(n)
                    accumulator.add(Self.data(["v": .integer(n)]))
                } else {
                    accumulator.add(Self.data(["v": .string("skip")]))
                }
            }
            let result = accumulator.result
            #expect(result["count"] == .integer(Int64(count)))
            #expect(result["sum_v"] == .integer(ints.reduce(0, +)))
            #expect(result["average_v"] == (ints.isEmpty ? .null : .double(Double(ints.reduce(0, +)) / Double(ints.count))))
        }
    }
}
