public import DocModel

extension ClientMessage {
    /// `addTarget`: start listening to a target.
    ///
    /// ```json
    /// {"type": "addTarget", "targetId": 2,
    ///  "target": {"path": "rooms/r1/messages", "orderBy": [{"field": "sentAt", "direction": "desc"}], "limit": 50},
    ///  "resumeToken": "AQAAAAAAAAAB…", "expectedCount": 12}
    /// ```
    /// Without a resume token the server sends the target's results; with one, only what
    /// changed since (or a `reset` and the results, when the token is too old). The client
    /// chooses target ids (queries even, limbo resolutions odd, as in Firestore).
    public struct AddTarget: Sendable, Hashable, Codable, WireMessage {
        /// The client's id for the target.
        public var targetID: Int32
        /// What to listen to (a query in target form, or a single document).
        public var target: Target
        /// Where the client's copy of the target stands, from an earlier `current` or global
        /// `noChange`; `nil` to start from scratch.
        public var resumeToken: [UInt8]?
        /// How many documents the client has in the target, sent with a resume token so the
        /// server can answer with an existence filter.
        public var expectedCount: Int?

        /// Creates the message as given; nothing is checked until a ``FrameDecoder`` reads its
        /// frame.
        public init(targetID: Int32, target: Target, resumeToken: [UInt8]? = nil, expectedCount: Int? = nil) {
            self.targetID = targetID
            self.target = target
            self.resumeToken = resumeToken
            self.expectedCount = expectedCount
        }

        static let wireType = "addTarget"
        static let wireFieldNames: Set<String> = ["targetId", "target", "resumeToken", "expectedCount"]

        var wireFields: [(String, Value?)] {
            [("targetId", .integer(Int64(targetID))), ("target", target.wireValue),
             ("resumeToken", Wire.bytes(resumeToken)), ("expectedCount", expectedCount.map { .integer(Int64($0)) })]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            targetID = try object.targetID("targetId")
            target = try Target(wire: try object.value("target"), at: object.at("target"), limits: limits)
            resumeToken = try object.optionalBytes("resumeToken", maxBytes: limits.maxTokenBytes)
            expectedCount = try object.optionalInt("expectedCount", in: 0...Int64(Int32.max))
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }

    /// `removeTarget`: stop listening to a target. The server answers with a `targetChange`
    /// of state `removed`.
    ///
    /// ```json
    /// {"type": "removeTarget", "targetId": 2}
    /// ```
    public struct RemoveTarget: Sendable, Hashable, Codable, WireMessage {
        /// The target to remove.
        public var targetID: Int32

        /// Creates the message for the target the client added as `targetID`.
        public init(targetID: Int32) { self.targetID = targetID }

        static let wireType = "removeTarget"
        static let wireFieldNames: Set<String> = ["targetId"]
        var wireFields: [(String, Value?)] { [("targetId", .integer(Int64(targetID)))] }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            targetID = try object.targetID("targetId")
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}
