import Testing
@testable import DocModel
import DocTestTraits

@Suite("Attachment ids and references", .cpuBound)
struct AttachmentIDTests {
    static let hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"   // SHA-256 of "test"

    @Test func idRoundTripsThroughDigestBytes() throws {
        let id = try AttachmentID(Self.hex)
        #expect(id.digestBytes.count == 32)
        #expect(id.digestBytes.first == 0x9f && id.digestBytes.last == 0x08)
        #expect(AttachmentID(digest: id.digestBytes) == id)
    }

    @Test(arguments: [
        "", "abc", String(repeating: "a", count: 63), String(repeating: "a", count: 65),
        String(repeating: "A", count: 64), "../" + String(repeating: "a", count: 61),
        String(repeating: "g", count: 64),
    ])
    func malformedIdsAreRefused(_ text: String) {
        #expect(throws: DocError.self) { try AttachmentID(text) }
        #expect(!AttachmentID.isValid(text))
    }

    @Test func jsonEscapeReadsAndWritesAReference() throws {
        let value = try Value(json: #"{"photo":{"$attachment":"\#(Self.hex)"}}"#)
        #expect(value.mapValue?["photo"] == .attachment(try AttachmentID(Self.hex)))
        #expect(value.jsonString == #"{"photo":{"$attachment":"\#(Self.hex)"}}"#)
        let error = #expect(throws: DocError.self) { try Value(json: #"{"$attachment":"nope"}"#) }
        #expect(error?.message.contains("64 lowercase hex") == true)
    }

    @Test func binaryEncodingKeepsTheReference() throws {
        let value = Value.map(["photo": .attachment(try AttachmentID(Self.hex))])
        #expect(try Value(binary: value.binaryEncoded()).isIdentical(to: value))
        #expect(Value.attachment(try AttachmentID(Self.hex)).typeName == "attachment")
        #expect(DocumentLimits.storageSize(of: .attachment(try AttachmentID(Self.hex))) == 65)
    }
}
