package import DocModel

/// The errors every ``BlobStore`` gives for the same situations, worded once: a client sees
/// the same message whichever store the server runs on. Located at `attachments/<id>`.
package enum BlobStoreError {
    /// Where an error about attachment `id` is located.
    package static func at(_ id: AttachmentID) -> String { "attachments/\(id)" }

    /// A declaration no store accepts: under 1 byte, or over `maxSize`.
    package static func check(_ declaration: UploadDeclaration, maxSize: Int64, id: AttachmentID) throws(DocError) {
        guard declaration.size >= 1 else {
            throw DocError(.invalidArgument, "an attachment has at least 1 byte", at: at(id))
        }
        guard declaration.size <= maxSize else {
            throw DocError(.invalidArgument,
                           "attachment of \(declaration.size) bytes is larger than the limit of \(maxSize) bytes", at: at(id))
        }
    }

    package static func alreadyComplete(_ id: AttachmentID) -> DocError {
        DocError(.alreadyExists, "attachment \(id) is already complete", at: at(id))
    }

    package static func declaredOtherwise(_ id: AttachmentID, inProgress: Int64, declared: Int64) -> DocError {
        DocError(.failedPrecondition,
                 "an upload of \(id) declared as \(inProgress) bytes is in progress, not \(declared): continue it, or start "
                     + "over at offset 0", at: at(id))
    }

    package static func continuesAt(_ id: AttachmentID, received: Int64, not offset: Int64) -> DocError {
        DocError(.failedPrecondition, "the upload of \(id) continues at offset \(received), not \(offset)", at: at(id))
    }

    package static func noUpload(_ id: AttachmentID, startAt offset: Int64) -> DocError {
        DocError(.failedPrecondition, "no upload of \(id) is in progress: start at offset 0, not \(offset)", at: at(id))
    }

    package static func noUploadInProgress(_ id: AttachmentID) -> DocError {
        DocError(.notFound, "no upload of \(id) is in progress", at: at(id))
    }

    package static func bytesMissing(_ id: AttachmentID, received: Int64, size: Int64) -> DocError {
        DocError(.failedPrecondition, "the upload of \(id) has \(received) of \(size) bytes", at: at(id))
    }

    package static func hashMismatch(_ id: AttachmentID, size: Int64, digest: AttachmentID) -> DocError {
        DocError(.invalidArgument,
                 "the \(size) bytes received hash to \(digest), not to the id \(id): the upload was discarded; upload the "
                     + "attachment again from offset 0", at: at(id))
    }

    package static func notFound(_ id: AttachmentID) -> DocError {
        DocError(.notFound, "attachment \(id) not found", at: at(id))
    }

    package static func pastTheEnd(_ id: AttachmentID, offset: Int64, size: Int64) -> DocError {
        DocError(.outOfRange, "offset \(offset) is past the end of attachment \(id) (\(size) bytes)", at: at(id))
    }

    package static func pastTheDeclaredSize(adding count: Int, at offset: Int64, limit: Int64) -> DocError {
        DocError(.outOfRange, "\(count) more bytes at offset \(offset) go past the declared size of \(limit) bytes",
                 at: "upload")
    }
}
