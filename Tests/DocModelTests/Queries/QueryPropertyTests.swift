import Testing
@testable import DocModel
import DocTestTraits

private typealias F = QueryFixtures

@Suite("Query properties (seeded random)", .cpuBound)
struct QueryPropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 42, 0xDEC0DE]

    @Test(arguments: seeds)
    func compareIsATotalOrder(_ seed: UInt64) {
        var r = QueryRandom(seed: seed)
        for _ in 0..<40 {
            let (q, _) = r.query()
            let docs = r.documents(25)
            for x in docs {
                #expect(q.compare(x, x) == 0)
                for y in docs {
                    let xy = q.compare(x, y), yx = q.compare(y, x)
                    #expect(xy == -yx, "antisymmetry \(q) \(x.key) \(y.key)")
                    if x.key != y.key { #expect(xy != 0, "distinct keys never tie \(q)") }
                }
            }
            for _ in 0..<200 {
                let x = r.pick(docs), y = r.pick(docs), z = r.pick(docs)
                if q.compare(x, y) <= 0 && q.compare(y, z) <= 0 {
                    #expect(q.compare(x, z) <= 0, "transitivity \(q) \(x.key) \(y.key) \(z.key)")
                }
            }
            // Sorting with the comparator agrees with compare on every adjacent pair.
            let sorted = docs.sorted(by: q.comparator)
            for (x, y) in zip(sorted, sorted.dropFirst()) { #expect(q.compare(x, y) < 0) }
        }
    }

    @Test(arguments: seeds)
    func resultsDoNotDependOnInputOrder(_ seed: UInt64) {
        var r = QueryRandom(seed: seed)
        var nonEmpty = 0
        for _ in 0..<60 {
            let (q, _) = r.query()
            let docs = r.documents(30)
            let expected = F.keys(q.results(from: docs))
            if !expected.isEmpty { nonEmpty += 1 }
            for _ in 0..<3 {
                var shuffled = docs
                shuffled.shuffle(using: &r.rng)
                #expect(F.keys(q.results(from: shuffled)) == expected, "\(q)")
            }
            let results = q.results(from: docs)
            #expect(results.allSatisfy(q.matches))
            if let limit = q.limit { #expect(results.count <= limit) }
            for (x, y) in zip(results, results.dropFirst()) { #expect(q.compare(x, y) < 0, "\(q)") }
            // Without the limit: exactly the matching documents.
            #expect(Set(F.keys(docs.filter(q.matches))).isSuperset(of: expected))
        }
        #expect(nonEmpty > 5, "the generator produces queries with results")
    }

    @Test(arguments: seeds)
    func targetsRunToTheSameResults(_ seed: UInt64) throws {
        var r = QueryRandom(seed: seed)
        var lastCount = 0
        for _ in 0..<60 {
            let (q, _) = r.query()
            let docs = r.documents(30)
            let t = try q.toTarget()
            for d in docs { #expect(t.matches(d) == q.matches(d), "\(q) \(d.key)") }
            var viaTarget = docs.filter(t.matches).sorted { t.compare($0, $1) < 0 }
            if let limit = t.limit { viaTarget = Array(viaTarget.prefix(limit)) }
            if q.hasLimitToLast {
                viaTarget.reverse()
                lastCount += 1
            }
            #expect(F.keys(viaTarget) == F.keys(q.results(from: docs)), "\(q)")
        }
        #expect(lastCount > 0, "some limit(toLast:) queries were generated")
    }

    @Test(arguments: seeds)
    func filterOrderDoesNotChangeTheID(_ seed: UInt64) throws {
        var r = QueryRandom(seed: seed)
        var checked = 0
        for _ in 0..<60 {
            let (q, used) = r.query()
            guard used.count == 2 else { continue }
            var reversed = try Query(collection: "c")
            for f in used.reversed() { reversed = try reversed.filter(f) }
            for ob in q.explicitOrderBys { reversed = try reversed.order(by: ob.field, descending: ob.isDescending) }
            if let limit = q.limit {
                reversed = try q.limitType == .first ? reversed.limit(to: limit) : reversed.limit(toLast: limit)
            }
            reversed = reversed.includingDeleted(q.includeDeleted)
            #expect(reversed.canonicalID == q.canonicalID)
            #expect(reversed == q)
            checked += 1
        }
        #expect(checked > 5)
    }
}
