internal import DocModel
internal import PostgresNIO

/// How errors of the database and of postgres-nio become ``DocError``s:
///
/// | cause                                                         | code          |
/// |---------------------------------------------------------------|---------------|
/// | serialization failure, deadlock (SQLSTATE 40001, 40P01)       | `aborted`     |
/// | connection lost or refused, server shutting down or starting  | `unavailable` |
/// | (SQLSTATE classes 08, 57P0x, 53300), pool closed, timeouts     |               |
/// | a row that does not decode                                    | `dataLoss`    |
/// | anything else the server reports                              | `internal`, with its message |
enum PostgresErrorMapping {
    /// Decodes a row of `database` (a redacted URL) with `body`, turning a decoding failure
    /// into `dataLoss` ("read `what`: …").
    static func decode<T>(_ what: String, in database: String, _ body: () throws -> T) throws(DocError) -> T {
        do {
            return try body()
        } catch {
            throw map(error, doing: "read \(what)", database: database)
        }
    }

    /// The ``DocError`` for `error`, raised while doing `what` ("commit", "read documents")
    /// on the database named `database` (a redacted URL).
    static func map(_ error: any Error, doing what: String, database: String) -> DocError {
        if let error = error as? DocError { return error }
        if let error = error as? PostgresTransactionError {
            if let inner = error.closureError ?? error.commitError ?? error.beginError {
                return map(inner, doing: what, database: database)
            }
        }
        if let error = error as? PSQLError { return map(psql: error, doing: what, database: database) }
        if error is PostgresDecodingError {
            return DocError(.dataLoss, "\(what): a row of \(database) does not have the expected shape: \(String(reflecting: error))")
        }
        if error is CancellationError {
            return DocError(.cancelled, "\(what) was cancelled")
        }
        if error is ChannelError || error is IOError {
            return DocError(.unavailable, "\(what): the connection to \(database) failed: \(error)")
        }
        // Errors of the connection pool (e.g. its circuit breaker while connections cannot be
        // made) and of the transport: the database cannot be reached.
        let name = String(reflecting: type(of: error))
        if name.contains("ConnectionPool") || name.contains("NIO") {
            return DocError(.unavailable, "\(what): cannot reach \(database): \(error)")
        }
        return DocError(.internal, "\(what) failed on \(database): \(error)")
    }

    static func map(psql error: PSQLError, doing what: String, database: String) -> DocError {
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            var detail = message
            if let more = error.serverInfo?[.detail] { detail += " (\(more))" }
            switch state {
            case "40001", "40P01":
                return DocError(.aborted, "\(what) conflicted with a concurrent transaction, retry it: \(detail) [SQLSTATE \(state)]")
            case "53300", "57P01", "57P02", "57P03", "57014":
                return DocError(.unavailable, "\(what): \(database) is not serving: \(detail) [SQLSTATE \(state)]")
            case let s where s.hasPrefix("08"):
                return DocError(.unavailable, "\(what): the connection to \(database) failed: \(detail) [SQLSTATE \(state)]")
            default:
                return DocError(.internal, "\(what) failed on \(database): \(detail) [SQLSTATE \(state)]")
            }
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown, .poolClosed, .queryCancelled,
             .listenFailed, .unlistenFailed:
            var message = "\(what): the connection to \(database) was lost (\(error.code))"
            if let underlying = error.underlying { message += ": \(underlying)" }
            return DocError(.unavailable, message)
        case .sslUnsupported, .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            return DocError(.unavailable, "\(what): TLS with \(database) failed (\(error.code)); set sslmode in the URL")
        case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            return DocError(.unavailable, "\(what): cannot authenticate with \(database) (\(error.code)); check the user and password in the URL")
        default:
            return DocError(.internal, "\(what) failed on \(database): \(error.code)")
        }
    }
}
