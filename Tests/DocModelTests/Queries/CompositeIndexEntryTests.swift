import DocModel
import DocTestSupport
import DocTestTraits
import Testing

/// A composite index's rows as server stores keep them (``CompositeIndex/entry(of:)``), the
/// queries it serves (``CompositeIndexMatch``), and its configuration file.
@Suite("Composite indexes: rows, matches, configuration", .cpuBound)
struct CompositeIndexEntryTests {
    /// Random documents (every value type, missing fields, ties, tombstones): the rows' bytewise order is
    /// the order of the query the index serves (every field as an order-by), ties broken by the
    /// document id; the documents with a row are those the query matches; the range of the
    /// leading values holds exactly the rows whose leading fields equal them.
    @Test(arguments: 0..<12 as Range<UInt64>)
    func rowsOrderAsTheQueriesTheyServe(seed: UInt64) throws {
        var data = RandomQueryData(seed: seed)
        var documents: [Document] = []
        for i in 0..<150 {
            let key = try DocumentKey("items/d\(i % 3 == 0 ? "x" : "")\(i)")
            documents.append(Document(key: key, data: data.data(), version: .none))
        }
        for index in RandomQueryData.compositeIndexes {
            for reversed in [false, true] {
                // Tombstones have rows too (`includeDeleted` queries read them).
                var query = try Query(collection: "items").includingDeleted()
                for field in index.fields {
                    query = try query.order(by: field.path, descending: (field.direction == .descending) != reversed)
                }
                let target = try query.toTarget()
                let match = try #require(CompositeIndexMatch(target: target, conjunction: [], indexes: [index]))
                #expect(match.reverse == reversed && match.leading.isEmpty)
                var rows: [(value: [UInt8], document: Document)] = []
                var tooLarge: Set<DocumentKey> = []
                for document in documents {
                    switch index.entry(of: document) {
                    case .value(let value)?: rows.append((value, document))
                    case .tooLarge?: tooLarge.insert(document.key)
                    case nil: break
                    }
                }
                rows.sort { OrderedCode.compare($0.value, $1.value) < 0 }
                if reversed { rows.reverse() }
                let expected = fullScan(documents, target, limit: nil).filter { !tooLarge.contains($0.key) }
                #expect(rows.map(\.document.key) == expected.map(\.key), "seed \(seed) \(index) reversed \(reversed)")
                #expect(Set(rows.map(\.value)).count == rows.count, "every row is distinct (the document id is in it)")

                // The leading values of a stored document: its range holds the rows equal on them.
                guard let sample = rows.first?.document else { continue }
                let leading = index.fields.dropLast().map { sample.value(at: $0.path)! }
                let range = index.entryRange(leading: leading)
                let inRange = rows.filter { row in
                    OrderedCode.compare(row.value, range.lower) >= 0 && (range.upper.map { OrderedCode.compare(row.value, $0) < 0 } ?? true)
                }
                let equal = rows.filter { row in zip(index.fields, leading).allSatisfy { row.document.value(at: $0.path) == $1 } }
                #expect(Set(inRange.map(\.document.key)) == Set(equal.map(\.document.key)), "seed \(seed) \(index) leading \(leading)")
            }
        }
    }

    /// The range of leading values and bounds of the next field (value encodings and type
    /// tags, inclusive or not, in either direction of the field) holds exactly the rows whose
    /// leading fields equal the values and whose next field's encoding is within the bounds,
    /// as a field index's range reads them.
    @Test(arguments: 0..<8 as Range<UInt64>)
    func rangesOfTheNextFieldHoldTheRowsWithinThem(seed: UInt64) throws {
        var data = RandomQueryData(seed: seed)
        var documents: [Document] = []
        for i in 0..<150 {
            documents.append(Document(key: try DocumentKey("items/d\(i)"), data: data.data(), version: .none))
        }
        /// Whether `encoded` is within the bounds, by the field index's rule: an exclusive lower
        /// end and an inclusive upper end reach past every encoding that starts with them.
        func within(_ encoded: [UInt8], _ lower: CompositeIndex.EncodedBound?, _ upper: CompositeIndex.EncodedBound?) -> Bool {
            func startsWith(_ bound: [UInt8]) -> Bool { encoded.starts(with: bound) }
            if let lower {
                let c = OrderedCode.compare(encoded, lower.encoded)
                if lower.inclusive ? c < 0 : (c <= 0 || startsWith(lower.encoded)) { return false }
            }
            if let upper {
                let c = OrderedCode.compare(encoded, upper.encoded)
                if upper.inclusive ? (c > 0 && !startsWith(upper.encoded)) : c >= 0 { return false }
            }
            return true
        }
        var checked = 0
        for index in RandomQueryData.compositeIndexes {
            let rows: [(value: [UInt8], document: Document)] = documents.compactMap { document in
                guard case .value(let value)? = index.entry(of: document) else { return nil }
                return (value, document)
            }
            for _ in 0..<40 {
                guard let sample = rows.isEmpty ? nil : data.pick(rows).document else { continue }
                let leadingCount = Int.random(in: 0..<index.fields.count, using: &data.rng)
                let leading = index.fields.prefix(leadingCount).map { sample.value(at: $0.path)! }
                let next = index.fields[leadingCount].path
                func bound() -> CompositeIndex.EncodedBound? {
                    guard data.chance(75) else { return nil }
                    let value = data.chance(80) ? (data.pick(rows).document.value(at: next) ?? data.value()) : data.value()
                    let encoded = value.indexEncoded()
                    return (data.chance(15) ? [encoded[0] + (data.chance(50) ? 1 : 0)] : encoded, data.chance(50))
                }
                let (lower, upper) = (bound(), bound())
                let range = index.entryRange(leading: leading, nextLower: lower, nextUpper: upper)
                let inRange = rows.filter { row in
                    OrderedCode.compare(row.value, range.lower) >= 0 && (range.upper.map { OrderedCode.compare(row.value, $0) < 0 } ?? true)
                }
                let expected = rows.filter { row in
                    zip(index.fields, leading).allSatisfy { row.document.value(at: $0.path)!.indexEncoded() == $1.indexEncoded() }
                        && within(row.document.value(at: next)!.indexEncoded(), lower, upper)
                }
                #expect(Set(inRange.map(\.document.key)) == Set(expected.map(\.document.key)),
                        "seed \(seed) \(index) leading \(leading) lower \(String(describing: lower)) upper \(String(describing: upper))")
                checked += 1
            }
        }
        #expect(checked > 100)
    }

    /// A document in another collection group, or without one of the fields, has no row; one
    /// whose values make the row too long has the marker instead.
    @Test func documentsWithoutARow() throws {
        let index = try CompositeIndex(collectionGroup: "items", fields: [.init("a"), .init("b")])
        let full: ObjectValue = ObjectValue(["a": .integer(1), "b": .string("x")])
        #expect(index.entry(of: Document(key: try DocumentKey("other/d1"), data: full, version: .none)) == nil)
        #expect(index.entry(of: Document(key: try DocumentKey("rooms/r1/items/d1"), data: full, version: .none)) != nil)
        #expect(index.entry(of: Document(key: try DocumentKey("items/d1"), data: ObjectValue(["a": .integer(1)]), version: .none)) == nil)
        let long = ObjectValue(["a": .string(String(repeating: "x", count: 900)), "b": .string(String(repeating: "y", count: 900))])
        #expect(index.entry(of: Document(key: try DocumentKey("items/d1"), data: long, version: .none)) == .tooLarge)
    }

    /// The index with the most leading equalities wins; order-bys must be the index's trailing
    /// fields all in its directions or all reversed; a collection group is not served.
    @Test func whichIndexServesAQuery() throws {
        let ab = try CompositeIndex(collectionGroup: "items", fields: [.init("a"), .init("b", .descending)])
        let acb = try CompositeIndex(collectionGroup: "items", fields: [.init("a"), .init("c"), .init("b", .descending)])
        let items = try Query(collection: "items")
        /// The query's top-level field filters are its conjunction (these queries have no others).
        func match(_ query: Query) throws -> CompositeIndexMatch? {
            let target = try query.toTarget()
            let conjunction = target.filters.compactMap { filter -> FieldFilter? in
                if case .field(let f) = filter { f } else { nil }
            }
            return CompositeIndexMatch(target: target, conjunction: conjunction, indexes: [ab, acb])
        }
        let both = try match(try items.filter("a", .equal, 1).filter("c", .equal, 2).order(by: "b", descending: true))
        #expect(both?.index == acb && both?.leading == [1, 2] && both?.reverse == false)
        let one = try match(try items.filter("a", .equal, 1).order(by: "b"))
        #expect(one?.index == ab && one?.leading == [1] && one?.reverse == true)
        #expect(try match(try items.filter("a", .equal, 1).order(by: "c")) == nil)
        #expect(try match(try items.filter("a", .arrayContains, 1).order(by: "b", descending: true)) == nil,
                "only an equality supplies a leading value")
        let unbounded = try match(try items.filter("a", .greaterThan, 1).order(by: "a").order(by: "b", descending: true))
        #expect(unbounded?.index == ab && unbounded?.leading == [] && unbounded?.reverse == false, "every field an order-by")
        #expect(try match(try items.order(by: "b")) == nil, "the leading field has no equality")
        #expect(try match(try Query(collectionGroup: "items").filter("a", .equal, 1).order(by: "b")) == nil)
        #expect(try match(try Query(collection: "other").filter("a", .equal, 1).order(by: "b")) == nil)
    }

    @Test func configurationFile() throws {
        let indexes = try CompositeIndex.configuration(json: """
            {"indexes": [
               {"collectionGroup": "items", "queryScope": "COLLECTION",
                "fields": [{"fieldPath": "category", "order": "ASCENDING"}, {"fieldPath": "score", "order": "DESCENDING"}]},
               {"collectionGroup": "rooms", "fields": [{"fieldPath": "meta.`odd name`", "order": "ASCENDING"},
                                                       {"fieldPath": "at", "order": "ASCENDING"}]}],
             "fieldOverrides": [{"collectionGroup": "items", "fieldPath": "blob", "indexes": []}]}
            """)
        #expect(indexes == [
            try CompositeIndex(collectionGroup: "items", fields: [.init("category"), .init("score", .descending)]),
            try CompositeIndex(collectionGroup: "rooms", fields: [.init(path: FieldPath(segments: ["meta", "odd name"])), .init("at")]),
        ])
        for index in indexes {
            #expect(try CompositeIndex.configurationEntry(json: index.configurationJSON) == index)
        }
        #expect(try CompositeIndex.configuration(json: "{}") == [])
    }

    @Test(arguments: [
        ("[1", "not JSON"),
        (#"{"indexes": {}}"#, "indexes must be an array"),
        (#"{"indexs": []}"#, "the index configuration.indexs is not a known member"),
        (#"{"indexes": [{"collectionGroup": "items", "queryScope": "COLLECTION_GROUP", "fields": []}]}"#, "indexes[0].queryScope COLLECTION_GROUP is not supported"),
        (#"{"indexes": [{"collectionGroup": "items", "fields": [{"fieldPath": "a", "order": "ASCENDING"}, {"fieldPath": "b", "arrayConfig": "CONTAINS"}]}]}"#, "indexes[0].fields[1].arrayConfig"),
        (#"{"indexes": [{"collectionGroup": "items", "fields": [{"fieldPath": "a", "order": "ASC"}, {"fieldPath": "b", "order": "ASCENDING"}]}]}"#, "indexes[0].fields[0].order must be"),
        (#"{"indexes": [{"collectionGroup": "items", "fields": [{"fieldPath": "a", "order": "ASCENDING"}]}]}"#, "at least two fields"),
        (#"{"indexes": [{"collectionGroup": "items", "feilds": []}]}"#, "indexes[0].feilds is not a known member"),
        (#"{"indexes": [{"fields": []}]}"#, "indexes[0].collectionGroup must be"),
        (#"{"indexes": [{"collectionGroup": "items", "fields": [{"fieldPath": "a..b", "order": "ASCENDING"}, {"fieldPath": "c", "order": "ASCENDING"}]}]}"#, "indexes[0].fields[0].fieldPath"),
    ])
    func badConfigurationsAreRefused(json: String, message: String) {
        let error = #expect(throws: DocError.self) { try CompositeIndex.configuration(json: json) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }
}
