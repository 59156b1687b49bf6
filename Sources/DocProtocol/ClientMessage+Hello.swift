internal import DocModel

extension ClientMessage {
    /// `hello`: the first frame of every connection.
    ///
    /// ```json
    /// {"type": "hello", "protocolVersion": 1, "token": "eyJhbGciOi…", "clientId": "5f0c…"}
    /// ```
    /// The server verifies the bearer `token` (it names the tenant and the user) and answers
    /// with `welcome`, or with a fatal `error` (`unauthenticated`, or `failedPrecondition` for
    /// a protocol version it does not speak) and closes the connection.
    public struct Hello: Sendable, Hashable, Codable, WireMessage {
        /// The protocol version the client speaks.
        public var protocolVersion: ProtocolVersion
        /// The bearer token (a JWT).
        public var token: String
        /// The client's id: stable per client installation; with a batch id it identifies a
        /// write batch for exactly-once commits. 1…``FrameLimits/maxClientIDBytes`` bytes.
        public var clientID: String

        /// Creates the message as given; ``FrameDecoder`` checks the token's size
        /// (``FrameLimits/maxAuthTokenBytes``) and the client id when reading it.
        public init(protocolVersion: ProtocolVersion = .current, token: String, clientID: String) {
            self.protocolVersion = protocolVersion
            self.token = token
            self.clientID = clientID
        }

        static let wireType = "hello"
        static let wireFieldNames: Set<String> = ["protocolVersion", "token", "clientId"]

        var wireFields: [(String, Value?)] {
            [("protocolVersion", .integer(Int64(protocolVersion.rawValue))), ("token", .string(token)),
             ("clientId", .string(clientID))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            protocolVersion = ProtocolVersion(try object.int("protocolVersion", in: 0...Int64(Int32.max)))
            token = try object.string("token")
            guard token.utf8.count <= limits.maxAuthTokenBytes else {
                throw Wire.error("the token is \(token.utf8.count) bytes; the limit is \(limits.maxAuthTokenBytes)", at: object.at("token"))
            }
            clientID = try Wire.clientID(try object.string("clientId"), at: object.at("clientId"), limits: limits)
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}

extension Wire {
    /// Checks a client id: 1…`maxClientIDBytes` UTF-8 bytes, no control characters.
    static func clientID(_ id: String, at path: @autoclosure () -> String, limits: FrameLimits) throws(DocError) -> String {
        guard !id.isEmpty else { throw Wire.error("the client id is empty", at: path()) }
        guard id.utf8.count <= limits.maxClientIDBytes else {
            throw Wire.error("the client id is \(id.utf8.count) bytes; the limit is \(limits.maxClientIDBytes)", at: path())
        }
        guard !id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw Wire.error("the client id contains control characters", at: path())
        }
        return id
    }
}
