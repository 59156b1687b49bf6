internal import DocModel
internal import Hummingbird

/// A refused attachment request: the HTTP status, the ``DocError`` the JSON body carries and,
/// for a wrong `Upload-Offset`, how many bytes the server holds.
struct AttachmentHTTPError: Error {
    var status: HTTPResponse.Status
    var error: DocError
    var received: Int64?

    init(_ status: HTTPResponse.Status, _ error: DocError, received: Int64? = nil) {
        self.status = status
        self.error = error
        self.received = received
    }

    init(_ status: HTTPResponse.Status, _ code: DocError.Code, _ message: String, received: Int64? = nil) {
        self.init(status, DocError(code, message), received: received)
    }

    /// The status of a store error by its code; 5xx for failures of the server itself.
    init(store error: DocError) {
        let status: HTTPResponse.Status
        switch error.code {
        case .invalidArgument: status = .badRequest
        case .unauthenticated: status = .unauthorized
        case .permissionDenied: status = .forbidden
        case .notFound: status = .notFound
        case .alreadyExists, .failedPrecondition, .aborted: status = .conflict
        case .outOfRange: status = .rangeNotSatisfiable
        case .resourceExhausted: status = .init(code: 507, reasonPhrase: "Insufficient Storage")
        case .unimplemented: status = .notImplemented
        case .unavailable: status = .serviceUnavailable
        default: status = .internalServerError
        }
        self.init(status, error)
    }

    /// Whether the failure is the server's (its detail goes to the log, not to the client).
    var isServerFailure: Bool { status.code >= 500 }

    /// The response: `{"error":{"code","message"},"received"?}`. A server failure's message
    /// is replaced by a generic one (it may name server paths).
    var response: Response {
        let message = isServerFailure && error.code != .unimplemented
            ? "the attachment store failed (\(error.code)); try again later"
            : error.message
        let body = AttachmentJSON.Failure(error: .init(code: error.code.name, message: message), received: received)
        return AttachmentJSON.response(status, body)
    }
}
