package import DocModel
import DocProtocol

/// One `aggregate` request to the server, as a unary call: its own connection (`hello`, the
/// request, its `aggregateResult`, close), so the listen and write streams' state machines
/// never see it. From `hello` to the answer, bounded by the configuration's handshake
/// timeout (connecting and fetching the token are bounded as for the streams).
enum AggregationRequest {
    /// The server's values by alias and the version they were read at.
    ///
    /// - Throws: the server's refusal (`permissionDenied`, `invalidArgument`, …), or
    ///   `unavailable` when the server cannot be reached or does not answer in time.
    static func run(
        target: Target, aggregations: [AggregateField], configuration: NetworkConfiguration, clientID: String
    ) async throws(DocError) -> (values: [String: Value], readTime: SnapshotVersion) {
        let token = try await StreamSession.fetchToken(configuration.token)
        let connection = try await configuration.transport.connect()
        let timeout = configuration.handshakeTimeout
        let (watchdog, timedOut) = StreamSession.watchdog(closing: connection, after: timeout)
        defer { watchdog.cancel() }
        do {
            try await connection.send(FrameEncoder.string(.hello(.init(token: token, clientID: clientID))))
            var welcomed = false
            for try await text in connection.inbound {
                switch try StreamSession.decode(text) {
                case .welcome where !welcomed:
                    welcomed = true
                    try await connection.send(FrameEncoder.string(.aggregate(.init(requestID: 1, target: target, aggregations: aggregations))))
                case .error(let frame) where frame.fatal || !welcomed:
                    throw frame.error
                case .aggregateResult(let answer) where answer.requestID == 1:
                    await connection.close()
                    if let error = answer.error { throw error }
                    guard let readTime = answer.readTime else {
                        throw DocError(.internal, "the server's aggregateResult has neither a result nor an error")
                    }
                    return (answer.result, readTime)
                default:
                    continue
                }
            }
        } catch let error as DocError {
            await connection.close()
            // The watchdog closing the connection ends it with the transport's error.
            throw timedOut.value ? Self.timedOut(timeout) : error
        } catch {
            await connection.close()
            if timedOut.value { throw Self.timedOut(timeout) }
            throw DocError(.unavailable, "the aggregation's connection failed: \(error)")
        }
        if timedOut.value { throw Self.timedOut(timeout) }
        throw DocError(.unavailable, "the server closed the connection before answering the aggregation")
    }

    private static func timedOut(_ timeout: Duration) -> DocError {
        DocError(.unavailable, "the server did not answer the aggregation within \(timeout)")
    }
}
