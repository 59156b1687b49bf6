internal import Crypto
internal import DocModel

/// SHA-256 over bytes fed in pieces: an attachment's id is the digest of its content.
struct BlobDigest {
    private var hasher = SHA256()

    /// Adds `bytes`.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        hasher.update(bufferPointer: bytes)
    }

    /// The id of everything added.
    consuming func finish() -> AttachmentID {
        AttachmentID(digest: hasher.finalize())
    }

    /// The id of `bytes`.
    static func id(of bytes: [UInt8]) -> AttachmentID {
        var digest = BlobDigest()
        bytes.withUnsafeBytes { digest.update($0) }
        return digest.finish()
    }
}
