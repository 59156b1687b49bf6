import Testing
@testable import DocCache
import DocModel
import DocTestTraits

@Suite("DocumentSet", .cpuBound)
struct DocumentSetTests {
    typealias F = ViewFixtures

    /// Ordered by `sort` descending, then key.
    let query = try! Query(collection: "rooms").order(by: "sort", descending: true)

    @Test func keepsDocumentsInQueryOrderWithKeyLookup() {
        let a = F.doc("rooms/a", 1, ["sort": 2])
        let b = F.doc("rooms/b", 1, ["sort": 3])
        let c = F.doc("rooms/c", 1, ["sort": 1])
        let set = DocumentSet(query: query, documents: [a, b, c])
        #expect(F.paths(set) == ["rooms/b", "rooms/a", "rooms/c"])
        #expect(set.count == 3)
        #expect(set.first == b && set.last == c)
        #expect(set.index(of: F.key("rooms/a")) == 1)
        #expect(set.index(of: F.key("rooms/zzz")) == nil)
        #expect(set.document(for: F.key("rooms/c")) == c)
        #expect(set.contains(F.key("rooms/b")) && !set.contains(F.key("rooms/d")))
        #expect(set.keys == F.keys("rooms/a", "rooms/b", "rooms/c"))
    }

    @Test func insertingAnExistingKeyReplacesAndRepositions() {
        var set = DocumentSet(query: query, documents: [
            F.doc("rooms/a", 1, ["sort": 2]), F.doc("rooms/b", 1, ["sort": 3]), F.doc("rooms/c", 1, ["sort": 1]),
        ])
        let movedA = F.doc("rooms/a", 2, ["sort": 10])
        set.insert(movedA)
        #expect(F.paths(set) == ["rooms/a", "rooms/b", "rooms/c"])
        #expect(set.count == 3)
        #expect(set.document(for: movedA.key) == movedA)
        #expect(set.index(of: movedA.key) == 0)
    }

    @Test func removeReturnsTheDocumentAndIgnoresMissingKeys() {
        var set = DocumentSet(query: query, documents: [F.doc("rooms/a", 1, ["sort": 2]), F.doc("rooms/b", 1, ["sort": 3])])
        #expect(set.remove(F.key("rooms/a"))?.key == F.key("rooms/a"))
        #expect(set.remove(F.key("rooms/a")) == nil)
        #expect(F.paths(set) == ["rooms/b"])
        #expect(set.index(of: F.key("rooms/b")) == 0)
        // Copy-returning variants leave the original untouched.
        let bigger = set.inserting(F.doc("rooms/c", 1, ["sort": 9]))
        #expect(set.count == 1 && bigger.count == 2)
        #expect(bigger.removing(F.key("rooms/b")).count == 1)
    }

    @Test func equalityComparesDocumentsInOrder() {
        let a = F.doc("rooms/a", 1, ["sort": 2])
        let b = F.doc("rooms/b", 1, ["sort": 3])
        let one = DocumentSet(query: query, documents: [a, b])
        let two = DocumentSet(query: query, documents: [b, a])
        #expect(one == two)
        // Same keys, different contents: not equal.
        #expect(one != two.inserting(F.doc("rooms/a", 2, ["sort": 2])))
        // Same documents, different order: not equal.
        let byKey = DocumentSet.orderedByKey().inserting(a).inserting(b)
        #expect(F.paths(byKey) == ["rooms/a", "rooms/b"])
        #expect(one != byKey)
        #expect(DocumentSet(query: query) == DocumentSet.orderedByKey())
    }

    @Test func keyBreaksTiesOfACustomOrder() {
        // A predicate under which every document ties: the key decides.
        var set = DocumentSet(areInIncreasingOrder: { _, _ in false })
        for path in ["rooms/c", "rooms/a", "rooms/b"] { set.insert(F.doc(path, 1)) }
        #expect(F.paths(set) == ["rooms/a", "rooms/b", "rooms/c"])
        #expect(set.index(of: F.key("rooms/c")) == 2)
        set.remove(F.key("rooms/b"))
        #expect(F.paths(set) == ["rooms/a", "rooms/c"])
    }

    @Test func staysSortedThroughManyRandomOperations() {
        var rng = SplitMixGenerator(seed: 0x5EED)
        let query = try! Query(collection: "items").order(by: "n")
        var set = DocumentSet(query: query)
        var model: [String: Int64] = [:]
        for _ in 0..<2_000 {
            let id = "d\(Int.random(in: 0..<300, using: &rng))"
            if Bool.random(using: &rng) {
                let n = Int64.random(in: 0..<50, using: &rng)
                set.insert(F.doc("items/\(id)", 1, ["n": .integer(n)]))
                model[id] = n
            } else {
                set.remove(F.key("items/\(id)"))
                model[id] = nil
            }
        }
        let expected = model.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map { "items/\($0.key)" }
        #expect(F.paths(set) == expected)
        for (i, path) in expected.enumerated() where i % 17 == 0 {
            #expect(set.index(of: F.key(path)) == i)
        }
    }
}
