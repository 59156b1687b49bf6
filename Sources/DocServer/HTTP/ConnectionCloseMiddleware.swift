internal import Hummingbird

/// Answers a request that asked for its connection to be closed (`Connection: close`) with
/// `Connection: close` (RFC 9112, section 9.6).
///
/// Hummingbird closes such a connection after the response but does not say so in it. A client
/// that does not read its own request header (libcurl, under FoundationNetworking's
/// `URLSession` on Linux) then keeps the connection in its pool, and its next request can be
/// written into it before the close arrives: the request is lost with the connection. The
/// attachment transport asks for a connection per request for exactly that reason, so every
/// answer to it says the connection ends.
///
/// Errors the router turns into responses (`HTTPResponseError`) are turned here, so they carry
/// the header too; any other error is rethrown, and Hummingbird answers it with a bare 500.
struct ConnectionCloseMiddleware<Context: Hummingbird.RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.asksForClose(request.headers) else { return try await next(request, context) }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        response.headers[.connection] = "close"
        return response
    }

    /// Whether Hummingbird closes the connection after the answer: its HTTP/1 handler does
    /// when the `Connection` field is exactly `close` (not for `Close`, or `close` in a list of
    /// options, which RFC 9112 also allows; the connection then stays open, and the answer does
    /// not claim otherwise). The same test as Hummingbird's, so the two cannot disagree.
    static func asksForClose(_ headers: HTTPFields) -> Bool {
        headers[.connection] == "close"
    }
}
