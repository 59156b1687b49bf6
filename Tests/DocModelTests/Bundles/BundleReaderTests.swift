import Testing
@testable import DocModel
import DocTestTraits

@Suite("Bundles: reading and writing", .cpuBound)
struct BundleReaderTests {
    static func v(_ micros: Int64) -> SnapshotVersion { SnapshotVersion(microseconds: micros) }

    /// A bundle from Firestore's spec tests (`bundle_spec_test.json`), byte for byte.
    static let firestoreBundle = #"127{"metadata":{"id":"test-bundle","createTime":"1970-01-01T00:00:00.000500000Z","version":1,"totalDocuments":1,"totalBytes":675}}293{"namedQuery":{"name":"bundled-query","readTime":"1970-01-01T00:00:00.000400000Z","bundledQuery":{"parent":"projects/test-project/databases/(default)/documents","structuredQuery":{"from":[{"collectionId":"collection"}],"orderBy":[{"field":{"fieldPath":"__name__"},"direction":"ASCENDING"}]}}}}154{"documentMetadata":{"name":"projects/test-project/databases/(default)/documents/collection/a","readTime":"1970-01-01T00:00:00.000500000Z","exists":true}}219{"document":{"name":"projects/test-project/databases/(default)/documents/collection/a","createTime":"1970-01-01T00:00:00.000250000Z","updateTime":"1970-01-01T00:00:00.000500000Z","fields":{"value":{"stringValue":"b"}}}}"#

    /// A deleted document, also from the spec tests.
    static let deletedBundle = #"127{"metadata":{"id":"test-bundle","createTime":"1970-01-01T00:00:00.003000000Z","version":1,"totalDocuments":1,"totalBytes":158}}155{"documentMetadata":{"name":"projects/test-project/databases/(default)/documents/collection/a","readTime":"1970-01-01T00:00:00.003000000Z","exists":false}}"#

    @Test func readsFirestoresBundleExactly() throws {
        let bundle = try DocumentBundle(bytes: Array(Self.firestoreBundle.utf8))
        #expect(bundle.metadata == BundleMetadata(id: "test-bundle", createTime: Self.v(500), version: 1, totalDocuments: 1, totalBytes: 675))
        #expect(bundle.namedQueries.count == 1)
        let named = try #require(bundle.namedQueries.first)
        #expect(named.name == "bundled-query")
        #expect(named.readTime == Self.v(400))
        #expect(try named.query.toTarget() == Query(collection: "collection").toTarget())
        #expect(bundle.documents.count == 1)
        let document = try #require(bundle.documents.first?.document)
        #expect(document.key == (try DocumentKey("collection/a")))
        #expect(document.version == Self.v(500))
        #expect(document.createTime == Self.v(250))
        #expect(document.data == ObjectValue(["value": .string("b")]))
        #expect(bundle.documents[0].metadata.readTime == Self.v(500))
        #expect(bundle.documents[0].metadata.queries.isEmpty)

        let deleted = try DocumentBundle(bytes: Array(Self.deletedBundle.utf8))
        #expect(deleted.documents.count == 1)
        #expect(deleted.documents[0].document == nil)
        #expect(deleted.documents[0].maybeDocument == .noDocument(NoDocument(key: try DocumentKey("collection/a"), version: Self.v(3000))))
    }

    @Test func progressCountersFollowTheElements() throws {
        var reader = BundleReader(Array(Self.firestoreBundle.utf8))
        #expect(try reader.readMetadata().totalBytes == 675)
        #expect(reader.bytesRead == 0)
        guard case .namedQuery = try reader.next() else { Issue.record("a named query comes second"); return }
        #expect(reader.bytesRead == 296 && reader.documentsRead == 0)
        guard case .documentMetadata = try reader.next() else { Issue.record("then the document's metadata"); return }
        #expect(reader.documentsRead == 0, "a found document counts once its contents are read")
        guard case .document = try reader.next() else { Issue.record("then the document"); return }
        #expect(reader.documentsRead == 1 && reader.bytesRead == 675)
        #expect(try reader.next() == nil)
        #expect(try reader.finish().documents.count == 1)
    }

    // MARK: Writing

    static let everyValue: [String: Value] = [
        "null": .null, "bool": true, "int": .integer(-9_223_372_036_854_775_808), "big": .integer(.max),
        "double": .double(-1.5), "whole": .double(3), "nan": .double(.nan), "inf": .double(.infinity), "ninf": .double(-.infinity),
        "time": .timestamp(try! Timestamp(seconds: 1_700_000_000, nanos: 123_456_789)),
        "string": .string("héllo \"q\"\n"), "bytes": .bytes([0, 1, 2, 255]),
        "ref": .reference(try! DocumentKey("rooms/r1/messages/m1")),
        "geo": .geoPoint(try! GeoPoint(latitude: 59.9, longitude: -10.75)),
        "array": .array([.integer(1), .string("two"), .array([]), .map([:])]),
        "map": .map(["nested": .map(["deep": .boolean(false)]), "`odd.key`": .integer(2)]),
        "emptyMap": .map([:]), "emptyArray": .array([]),
        "attachment": .attachment(try! AttachmentID(String(repeating: "ab", count: 32))),
    ]

    @Test func writtenBundlesReadBackIdentically() throws {
        let document = Document(key: try DocumentKey("rooms/r1"), data: ObjectValue(Self.everyValue), version: Self.v(2_000),
                                createTime: Self.v(1_000))
        let other = Document(key: try DocumentKey("rooms/r2"), data: ObjectValue(["n": 1]), version: Self.v(2_500))
        let query = try Query(collection: "rooms").filter("floor", .greaterThanOrEqual, 2).order(by: "floor").limit(to: 10)
        var writer = BundleWriter(id: "rooms-bundle", createTime: Self.v(3_000))
        try writer.add(BundleNamedQuery(name: "upper-floors", query: query, readTime: Self.v(3_000)))
        writer.add(document, readTime: Self.v(3_000), queries: ["upper-floors"])
        writer.addDeleted(try DocumentKey("rooms/gone"), readTime: Self.v(3_000), queries: ["upper-floors"])
        writer.add(other, readTime: Self.v(3_000))
        let bytes = writer.bytes()

        let bundle = try DocumentBundle(bytes: bytes)
        #expect(bundle.metadata == writer.metadata)
        #expect(bundle.metadata.totalDocuments == 3)
        #expect(bundle.namedQueries == [BundleNamedQuery(name: "upper-floors", query: query, readTime: Self.v(3_000))])
        let read = try #require(bundle.documents.first?.document)
        #expect(read.data.isIdentical(to: document.data), "\(read.data.jsonString)")
        #expect(read.version == document.version && read.createTime == document.createTime)
        #expect(bundle.documents[1].document == nil)
        #expect(bundle.documents[1].key.description == "rooms/gone")
        #expect(bundle.documents[2].document?.createTime == Self.v(2_500))
        #expect(bundle.documentKeys(ofQuery: "upper-floors").map(\.description) == ["rooms/r1", "rooms/gone"])
        // The JSON is Firestore's: integers as strings, names under the database.
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#""int":{"integerValue":"-9223372036854775808"}"#))
        #expect(text.contains(#""name":"projects/doccache/databases/(default)/documents/rooms/r1""#))
        #expect(text.contains(#""nan":{"doubleValue":"NaN"}"#))
    }

    @Test func documentsAsDeepAsTheModelAllowsReadBack() throws {
        var deep: Value = .array([.integer(1)])
        for i in 0..<(Value.maxDepth - 2) { deep = i.isMultiple(of: 2) ? .map(["m": deep]) : .array([deep]) }
        let document = Document(key: try DocumentKey("deep/d"), data: ObjectValue(["root": deep]), version: Self.v(5))
        var writer = BundleWriter(id: "deep", createTime: Self.v(5))
        writer.add(document, readTime: Self.v(5))
        let read = try DocumentBundle(bytes: writer.bytes())
        #expect(read.documents.first?.document?.data.isIdentical(to: document.data) == true)
    }

    @Test func namedQueriesKeepEveryPartOfTheQuery() throws {
        let queries: [Query] = [
            try Query(collection: "rooms"),
            try Query(collection: "rooms/r1/messages").order(by: "sentAt", descending: true).limit(toLast: 5),
            try Query(collectionGroup: "messages").filter(.or([.where(try FieldPath("a"), .equal, .null),
                                                               .where(try FieldPath("b"), .in, .array([1, 2]))])),
            try Query(collection: "rooms").filter("x", .notEqual, .double(.nan)).filter("tags", .arrayContains, "blue")
                .order(by: "x").start(after: [.integer(3)]).end(at: [.integer(9)]).limit(to: 2),
            try Query(collection: "rooms").order(by: FieldPath.documentID).start(at: [.string("r2")]).includingDeleted(),
            try Query(collectionGroup: "rooms", parent: ResourcePath("tenants/t1")).filter("floor", .lessThan, 3),
        ]
        for query in queries {
            let named = BundleNamedQuery(name: "q", query: query, readTime: Self.v(7))
            let back = try BundleNamedQuery(encodedJSON: named.encodedJSON)
            #expect(back == named, "\(String(decoding: named.encodedJSON, as: UTF8.self))")
            #expect(try back.query.toTarget() == query.toTarget())
        }
    }

    @Test func aDocumentQueryCannotBeANamedQuery() throws {
        var writer = BundleWriter(id: "b", createTime: Self.v(1))
        #expect(throws: DocError.self) {
            try writer.add(BundleNamedQuery(name: "doc", query: Query(document: try DocumentKey("rooms/r1")), readTime: Self.v(1)))
        }
    }

    // MARK: Bad input

    /// Frames JSON texts as elements.
    static func frame(_ elements: [String]) -> String {
        elements.map { "\($0.utf8.count)\($0)" }.joined()
    }

    static func metadata(documents: Int, bytes: Int) -> String {
        #"{"metadata":{"id":"b","createTime":"2026-01-01T00:00:00Z","version":1,"totalDocuments":\#(documents),"totalBytes":\#(bytes)}}"#
    }

    static let name = "projects/p/databases/d/documents/"
    static func documentMetadata(_ path: String, exists: Bool = true) -> String {
        #"{"documentMetadata":{"name":"\#(name)\#(path)","readTime":"2026-01-01T00:00:00Z","exists":\#(exists)}}"#
    }
    static func document(_ path: String, fields: String = #"{"n":{"integerValue":"1"}}"#) -> String {
        #"{"document":{"name":"\#(name)\#(path)","updateTime":"2026-01-01T00:00:00Z","fields":\#(fields)}}"#
    }

    /// A well-formed bundle of the given elements after the metadata, with correct totals.
    static func bundle(_ elements: [String], documents: Int) -> String { framed(elements, documents: documents).text }

    /// The bundle and the byte offset where each element starts (the metadata's is 0).
    static func framed(_ elements: [String], documents: Int) -> (text: String, offsets: [Int]) {
        let body = frame(elements)
        var text = frame([metadata(documents: documents, bytes: body.utf8.count)])
        var offsets: [Int] = [0]
        for element in elements {
            offsets.append(text.utf8.count)
            text += frame([element])
        }
        return (text, offsets)
    }

    /// Reads `text`, expecting `invalidArgument` at element `element`, byte offset `offset`.
    static func expectRefused(_ text: String, element: Int?, offset: Int, message: String,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try DocumentBundle(bytes: Array(text.utf8))
            Issue.record("the bundle was accepted", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .invalidArgument, sourceLocation: sourceLocation)
            let location = element.map { "bundle element \($0) at byte offset \(offset)" } ?? "end of bundle (byte offset \(offset))"
            #expect(error.location == location, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(message), "\(error)", sourceLocation: sourceLocation)
        }
    }

    /// Expects `elements` (after a metadata element with correct totals) refused at element
    /// `element` (counted from 1, the metadata being 1).
    static func expectRefused(_ elements: [String], documents: Int, element: Int, message: String,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        let (text, offsets) = framed(elements, documents: documents)
        expectRefused(text, element: element, offset: offsets[element - 1], message: message, sourceLocation: sourceLocation)
    }

    @Test func badFramingNamesTheElementAndItsOffset() {
        let (good, offsets) = Self.framed([Self.documentMetadata("c/a"), Self.document("c/a")], documents: 1)
        #expect((try? DocumentBundle(bytes: Array(good.utf8))) != nil)

        Self.expectRefused("", element: 1, offset: 0, message: "empty")
        Self.expectRefused("abc" + good, element: 1, offset: 0, message: "the length prefix is not a number")
        Self.expectRefused(good + "x7{}", element: 4, offset: good.utf8.count, message: "the length prefix is not a number")
        Self.expectRefused(String(good.dropLast(3)), element: 3, offset: offsets[2], message: "truncated")
        Self.expectRefused("5[1,2]", element: 1, offset: 0, message: "expected a JSON object after the length prefix 5")
        Self.expectRefused("3{a}", element: 1, offset: 0, message: "not valid JSON")
        Self.expectRefused("12345678901234567{}", element: 1, offset: 0, message: "more than 16 digits")
        Self.expectRefused([#"{"foo":{}}"#], documents: 0, element: 2, message: #"unknown bundle element "foo""#)
        Self.expectRefused(["{}"], documents: 0, element: 2, message: "exactly one member")
        Self.expectRefused(Self.frame([Self.documentMetadata("c/a")]), element: 1, offset: 0, message: "must be the metadata")
    }

    @Test func badSequencesAndTotals() {
        // A document without its metadata, or after another document's.
        Self.expectRefused([Self.document("c/a")], documents: 1, element: 2, message: "not preceded by its documentMetadata")
        Self.expectRefused([Self.documentMetadata("c/a"), Self.document("c/b")], documents: 1, element: 3,
                           message: "follows the documentMetadata of c/a")
        // Metadata saying the document exists, then no document.
        Self.expectRefused([Self.documentMetadata("c/a")], documents: 1, element: 2, message: "without the document")
        Self.expectRefused([Self.documentMetadata("c/a"), Self.documentMetadata("c/b", exists: false)], documents: 1,
                           element: 3, message: "expected the document c/a")
        // The same document twice; a second metadata element.
        Self.expectRefused([Self.documentMetadata("c/a", exists: false), Self.documentMetadata("c/a", exists: false)],
                           documents: 2, element: 3, message: "appears twice")
        Self.expectRefused([Self.metadata(documents: 0, bytes: 0)], documents: 0, element: 2, message: "second one")
        // Totals that disagree.
        let body = Self.frame([Self.documentMetadata("c/a"), Self.document("c/a")])
        let wrongCount = Self.frame([Self.metadata(documents: 2, bytes: body.utf8.count)]) + body
        Self.expectRefused(wrongCount, element: nil, offset: wrongCount.utf8.count, message: "holds 2 documents, but it holds 1")
        let wrongBytes = Self.frame([Self.metadata(documents: 1, bytes: body.utf8.count + 1)]) + body
        Self.expectRefused(wrongBytes, element: nil, offset: wrongBytes.utf8.count,
                           message: "take \(body.utf8.count + 1) bytes, but they take \(body.utf8.count)")
    }

    @Test func badContentNamesTheField() {
        func refusedDocument(_ fields: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
            Self.expectRefused([Self.documentMetadata("c/a"), Self.document("c/a", fields: fields)], documents: 1,
                               element: 3, message: message, sourceLocation: sourceLocation)
        }
        refusedDocument(#"{"n":{"integerValue":"1.5"}}"#, "document.fields.n.integerValue")
        refusedDocument(#"{"n":{"integerValue":"1","stringValue":"x"}}"#, "a value has one kind")
        refusedDocument(#"{"n":{"bytesValue":"***"}}"#, "not base64")
        refusedDocument(#"{"n":{"timestampValue":"yesterday"}}"#, "not an RFC 3339 timestamp")
        refusedDocument(#"{"n":{"referenceValue":"rooms/r1"}}"#, "not a resource name")
        refusedDocument(#"{"n":{"mapValue":{"fields":{"m":{"what":1}}}}}"#, "document.fields.n.mapValue.fields.m: a value needs one of")
        Self.expectRefused([Self.documentMetadata("c")], documents: 1, element: 2, message: "not a document name")
        let select = #"{"namedQuery":{"name":"q","readTime":"2026-01-01T00:00:00Z","bundledQuery":{"parent":"projects/p/databases/d/documents","structuredQuery":{"from":[{"collectionId":"c"}],"select":{}}}}}"#
        Self.expectRefused([select], documents: 0, element: 2, message: "'select' are not supported")
        let limitToLast = #"{"namedQuery":{"name":"q","readTime":"2026-01-01T00:00:00Z","bundledQuery":{"parent":"projects/p/databases/d/documents","structuredQuery":{"from":[{"collectionId":"c"}],"limit":{"value":3}},"limitType":"LAST"}}}"#
        Self.expectRefused([limitToLast], documents: 0, element: 2, message: "limit(toLast:)")
    }

    @Test func whitespaceAroundElementsIsAccepted() throws {
        let body = "\n" + Self.frame([Self.documentMetadata("c/a", exists: false)]) + " \n"
        let text = Self.frame([Self.metadata(documents: 1, bytes: body.utf8.count - 2)]) + body
        // The whitespace before an element counts with it; after the last one it does not.
        let bundle = try DocumentBundle(bytes: Array(text.utf8))
        #expect(bundle.documents.count == 1)
    }
}
