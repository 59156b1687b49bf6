import DocModel
import Foundation
import Testing
@testable import DocCache
import DocTestTraits

/// `@DocumentID` (filled from the path, never written) and `@ServerTimestamp` (nil writes the
/// sentinel), with the document coders and with other coders.
@Suite("Codable property wrappers", .cpuBound)
struct CodableWrapperTests {
    struct Item: Codable, Equatable {
        @DocumentID var id: String? = nil
        @DocumentID var path: DocumentKey? = nil
        var title: String
        @ServerTimestamp var updatedAt: Date? = nil
        @ServerTimestamp var createdAt: Timestamp? = nil
    }

    @Test func documentIDIsNeverWrittenAndComesFromThePath() throws {
        let task = Item(id: "ignored", path: try DocumentKey("elsewhere/x"), title: "t", updatedAt: nil, createdAt: nil)
        let fields = try DocumentEncoder().encode(task)
        #expect(fields["id"] == nil && fields["path"] == nil)
        let key = try DocumentKey("projects/p1/tasks/t7")
        // A stored field of the same name is ignored: the path is the id.
        let read = try DocumentDecoder().decode(Item.self, from: ["title": "t", "id": "stale"], documentKey: key)
        #expect(read.id == "t7")
        #expect(read.path == key)
        // Without a document, the id stays nil.
        #expect(try DocumentDecoder().decode(Item.self, from: ["title": "t"]).id == nil)
    }

    @Test func serverTimestampNilIsTheSentinelAndAValueIsATimestamp() throws {
        let at = try Timestamp(seconds: 1_714_564_800, nanos: 250_000_000)   // a Date holds it exactly
        var task = Item(title: "t", updatedAt: nil, createdAt: at)
        var fields = try DocumentEncoder().encode(task)
        #expect(fields["updatedAt"] == .serverTimestampSentinel)
        #expect(fields["createdAt"] == .value(.timestamp(at)))
        task.updatedAt = at.dateValue
        fields = try DocumentEncoder().encode(task)
        #expect(fields["updatedAt"] == .value(.timestamp(at)))
        // Missing, null and a timestamp read back.
        #expect(try DocumentDecoder().decode(Item.self, from: ["title": "t"]).updatedAt == nil)
        #expect(try DocumentDecoder().decode(Item.self, from: ["title": "t", "updatedAt": nil]).updatedAt == nil)
        #expect(try DocumentDecoder().decode(Item.self, from: ["title": "t", "createdAt": .timestamp(at)]).createdAt == at)
        #expect { try DocumentDecoder().decode(Item.self, from: ["title": "t", "createdAt": "now"]) } throws: {
            isDocError($0, at: "field createdAt", message: "expected a timestamp")
        }
    }

    struct Nested: Codable {
        struct Stamp: Codable { @ServerTimestamp var at: Date? = nil }
        var audit: Stamp
        var history: [Stamp]
    }

    @Test func aServerTimestampMayBeInAMapButNotInAnArray() throws {
        let fields = try DocumentEncoder().encode(Nested(audit: .init(), history: []))
        #expect(fields == ["audit": .map(["at": .serverTimestampSentinel]), "history": .value(.array([]))])
        #expect { try DocumentEncoder().encode(Nested(audit: .init(), history: [.init(at: Date()), .init()])) } throws: {
            isDocError($0, at: "field history[1].at", message: "cannot be inside an array")
        }
        #expect { try DocumentEncoder().encodeValue(Nested.Stamp()) } throws: { ($0 as? DocError)?.code == .invalidArgument }
    }

    /// Other coders see the wrappers as optionals, and a missing key decodes as nil there too.
    @Test func otherCodersSeeOptionals() throws {
        let task = Item(id: "t1", path: try DocumentKey("tasks/t1"), title: "t", updatedAt: nil,
                        createdAt: try Timestamp(seconds: 1_714_564_800, nanos: 250_000_000))
        let json = try JSONEncoder().encode(task)
        let object = try JSONSerialization.jsonObject(with: json) as? [String: Any]
        #expect(object?["id"] as? String == "t1")
        #expect(object?["path"] as? String == "tasks/t1")
        #expect(object?["createdAt"] as? String == "2024-05-01T12:00:00.250Z")
        #expect(try JSONDecoder().decode(Item.self, from: json) == task)
        let minimal = try JSONDecoder().decode(Item.self, from: Data(#"{"title": "t"}"#.utf8))
        #expect(minimal == Item(title: "t"))
    }
}
