internal import Crypto
package import DocModel

/// SHA-256 over bytes fed in pieces: an attachment's id is the digest of its content.
package struct BlobDigest {
    private var hasher = SHA256()

    package init() {}

    /// Adds `bytes`.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        hasher.update(bufferPointer: bytes)
    }

    /// The id of everything added.
    package consuming func finish() -> AttachmentID {
        AttachmentID(digest: hasher.finalize())
    }

    /// The id of `bytes`.
    package static func id(of bytes: [UInt8]) -> AttachmentID {
        var digest = BlobDigest()
        bytes.withUnsafeBytes { digest.update($0) }
        return digest.finish()
    }
}
