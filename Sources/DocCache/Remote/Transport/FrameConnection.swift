package import DocModel

/// One open connection of a ``FrameTransport``: text frames in both directions, in order.
package protocol FrameConnection: Sendable {
    /// The frames the server sends, in order. The sequence ends when the connection closes:
    /// normally after ``close()`` or when the server closed it, by throwing a `DocError`
    /// (usually `unavailable`) when the connection failed. It may be iterated once.
    var inbound: AsyncThrowingStream<String, any Error> { get }

    /// Sends one text frame. Frames are delivered in the order of the calls; a caller that
    /// needs that order awaits each send before the next.
    ///
    /// - Throws: `unavailable` when the connection is closed or fails.
    func send(_ frame: String) async throws(DocError)

    /// Closes the connection (idempotent). ``inbound`` ends.
    func close() async
}
