/// The id of an attachment (a photo, a PDF, any file a document refers to): the SHA-256 of
/// its content, as 64 lowercase hexadecimal characters.
///
/// Content addressing makes an attachment's identity its bytes: the same file added twice is
/// one attachment, an upload sent again is stored once, and the server checks the bytes it
/// received against the id without trusting a second hash. The id's syntax (hex digits only)
/// also keeps it safe as a file name on both sides.
public struct AttachmentID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 64 lowercase hexadecimal characters.
    public let hex: String

    /// The number of characters of an id.
    public static let length = 64

    /// An id from its hexadecimal form.
    ///
    /// - Throws: `invalidArgument` unless `hex` is exactly 64 characters `0-9a-f`.
    public init(_ hex: String) throws(DocError) {
        guard Self.isValid(hex) else {
            let shown = hex.count > 80 ? String(hex.prefix(80)) + "…" : hex
            throw DocError(.invalidArgument,
                "'\(shown)' is not an attachment id: an id is the SHA-256 of the content as 64 lowercase hex characters")
        }
        self.hex = hex
    }

    /// The id of `digest`, a 32-byte SHA-256.
    public init(digest: some Sequence<UInt8>) {
        let table = Array("0123456789abcdef".utf8)
        var chars: [UInt8] = []
        chars.reserveCapacity(Self.length)
        for byte in digest {
            chars.append(table[Int(byte >> 4)])
            chars.append(table[Int(byte & 0x0F)])
        }
        precondition(chars.count == Self.length, "a SHA-256 digest has 32 bytes")
        hex = String(decoding: chars, as: UTF8.self)
    }

    /// Whether `text` is a well-formed id.
    public static func isValid(_ text: String) -> Bool {
        let utf8 = text.utf8
        return utf8.count == length && utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    public var description: String { hex }

    public static func < (a: AttachmentID, b: AttachmentID) -> Bool { a.hex < b.hex }
}

extension AttachmentID {
    /// The 32 digest bytes the id spells (how the binary encodings store it).
    package var digestBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        var high: UInt8 = 0
        for (i, c) in hex.utf8.enumerated() {
            let nibble = c <= 0x39 ? c - 0x30 : c - 0x61 + 10
            if i % 2 == 0 { high = nibble << 4 } else { out.append(high | nibble) }
        }
        return out
    }
}
