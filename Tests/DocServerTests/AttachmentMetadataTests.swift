import DocModel
@testable import DocServer
import Foundation
import Testing

/// An attachment's metadata file as the file blob store reads it back.
@Suite struct AttachmentMetadataTests {
    static func json(size: Int64) -> Data {
        let hex = String(repeating: "ab", count: 32)
        return Data(#"{"id":"\#(hex)","size":\#(size),"contentType":"image/jpeg","sha256":"\#(hex)","createdAtMicros":5}"#.utf8)
    }

    @Test func aDamagedSizeIsRefused() throws {
        #expect(try JSONDecoder().decode(AttachmentMetadata.self, from: Self.json(size: 10)).size == 10)
        // A size of zero or below would make a suffix range (`bytes=-N`) count back past it.
        for size: Int64 in [0, -5, .min] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(AttachmentMetadata.self, from: Self.json(size: size)) }
        }
    }
}
