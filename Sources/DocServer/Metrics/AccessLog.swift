internal import DocModel
internal import Logging

/// The access log: one `info` line per operation a client asked for, on its own logger
/// (label `doccache.access` in `docctl serve`), so an operator can route or silence it apart
/// from the server's other lines. See docs/operations.md, "Logs".
///
/// Every line's message is the operation and its metadata has at least
///
/// | key | value |
/// |---|---|
/// | `tenant` | the tenant (`-` when not known yet, e.g. a refused token) |
/// | `uid` | the caller (`-` when not known) |
/// | `client` | the client id from `hello` (`-` for HTTP requests, which carry none) |
/// | `op` | `handshake`, `listen`, `unlisten`, `write_handshake`, `commit`, `aggregate`, `frame`, `attachment_upload_state`, `attachment_upload`, `attachment_download` |
/// | `code` | `ok` or the `DocError` code of the answer (`invalidArgument`, `permissionDenied`, …) |
/// | `latency_ms` | from receiving the operation to answering it, in milliseconds with three decimals |
///
/// plus `connection` on a WebSocket connection and, per operation, `batch`, `target`,
/// `request_id` or `status`. Nothing is built when the logger's level is above `info`.
enum AccessLog {
    /// The label of the access logger `docctl serve` makes.
    static let label = "doccache.access"

    /// Logs one access line for `op` answered with `code` (`nil`: ok), started at `started`.
    static func log(
        _ logger: Logger, op: String, code: DocError.Code?, started: ContinuousClock.Instant,
        _ extra: @autoclosure () -> Logger.Metadata = [:]
    ) {
        guard logger.logLevel <= .info else { return }
        let latency = milliseconds(started.duration(to: .now))
        var metadata = extra()
        metadata["op"] = .string(op)
        metadata["code"] = .string(code?.name ?? "ok")
        metadata["latency_ms"] = .string(latency)
        logger.info(Logger.Message(stringLiteral: op), metadata: metadata)
    }

    /// `duration` in milliseconds with three decimals (`0.412`, `12.034`).
    static func milliseconds(_ duration: Duration) -> String {
        let micros = max(0, duration.wholeMicroseconds)
        let fraction = String(micros % 1_000)
        return "\(micros / 1_000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// The metadata an access logger starts with for a connection.
    static func connectionLogger(_ base: Logger, tenant: String, uid: String, client: String, connection: String) -> Logger {
        var logger = base
        logger[metadataKey: "tenant"] = .string(tenant)
        logger[metadataKey: "uid"] = .string(uid)
        logger[metadataKey: "client"] = .string(client)
        logger[metadataKey: "connection"] = .string(connection)
        return logger
    }
}
