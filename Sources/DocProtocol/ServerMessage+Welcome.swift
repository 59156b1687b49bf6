public import DocModel

extension ServerMessage {
    /// `welcome`: the answer to a valid `hello`.
    ///
    /// ```json
    /// {"type": "welcome", "protocolVersion": 1, "connectionId": "c-17"}
    /// ```
    public struct Welcome: Sendable, Hashable, Codable, WireMessage {
        /// The protocol version the server speaks on this connection.
        public var protocolVersion: ProtocolVersion
        /// The server's name for the connection (it appears in the server's logs).
        public var connectionID: String

        /// Creates the message; `protocolVersion` defaults to the one this build speaks.
        public init(protocolVersion: ProtocolVersion = .current, connectionID: String) {
            self.protocolVersion = protocolVersion
            self.connectionID = connectionID
        }

        static let wireType = "welcome"
        static let wireFieldNames: Set<String> = ["protocolVersion", "connectionId"]
        var wireFields: [(String, Value?)] {
            [("protocolVersion", .integer(Int64(protocolVersion.rawValue))), ("connectionId", .string(connectionID))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            protocolVersion = ProtocolVersion(try object.int("protocolVersion", in: 0...Int64(Int32.max)))
            connectionID = try object.string("connectionId")
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }

    /// `error`: a frame the server could not process (`fatal: false`: the connection stays
    /// open and nothing was changed), or why the server is closing the connection
    /// (`fatal: true`: bad token, unsupported protocol version, a client too slow to read its
    /// frames, shutdown).
    ///
    /// ```json
    /// {"type": "error", "fatal": false,
    ///  "error": {"code": 3, "name": "invalidArgument", "message": "missing field \"targetId\"", "location": "removeTarget"}}
    /// ```
    public struct StreamError: Sendable, Hashable, Codable, WireMessage {
        /// What went wrong.
        public var error: DocError
        /// Whether the server closes the connection after this frame.
        public var fatal: Bool

        /// Creates the message; `fatal` says whether the server closes the connection after it.
        public init(_ error: DocError, fatal: Bool = false) {
            self.error = error
            self.fatal = fatal
        }

        static let wireType = "error"
        static let wireFieldNames: Set<String> = ["error", "fatal"]
        var wireFields: [(String, Value?)] { [("error", error.wireValue), ("fatal", .boolean(fatal))] }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            error = try DocError(wire: try object.value("error"), at: object.at("error"))
            fatal = try object.bool("fatal", default: false)
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}
