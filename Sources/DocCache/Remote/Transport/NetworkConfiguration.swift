/// How a store reaches its server: the transport, and where bearer tokens come from.
package struct NetworkConfiguration: Sendable {
    /// Opens connections (WebSocket in production, in-process in tests).
    package var transport: any FrameTransport
    /// Returns a bearer token for the store's tenant and user. Called before every
    /// connection, so a refreshed token is used from the next (re)connect on.
    package var token: @Sendable () async throws -> String
    /// How long the server may take to answer `hello` before the attempt counts as failed.
    package var handshakeTimeout: Duration
    /// Uploads and downloads attachments (`nil`: attachments stay on the device).
    package var attachments: (any AttachmentTransport)?

    /// A configuration over `transport`.
    package init(transport: any FrameTransport, token: @escaping @Sendable () async throws -> String,
                 handshakeTimeout: Duration = .seconds(30), attachments: (any AttachmentTransport)? = nil) {
        self.transport = transport
        self.attachments = attachments
        self.token = token
        self.handshakeTimeout = handshakeTimeout
    }
}
