public import DocModel

extension ClientMessage {
    /// `writeHandshake`: opens the write stream. The server answers with its own
    /// `writeHandshake` carrying a stream token; batches may follow at once.
    ///
    /// ```json
    /// {"type": "writeHandshake", "streamToken": "AQ…"}
    /// ```
    public struct WriteHandshake: Sendable, Hashable, Codable, WireMessage {
        /// The token of the last acknowledged write, if the client has one. The server does not
        /// need it to deduplicate (batch ids do that) and accepts any token.
        public var streamToken: [UInt8]?

        /// Creates the message; `streamToken` may be `nil` (a first handshake).
        public init(streamToken: [UInt8]? = nil) { self.streamToken = streamToken }

        static let wireType = "writeHandshake"
        static let wireFieldNames: Set<String> = ["streamToken"]
        var wireFields: [(String, Value?)] { [("streamToken", Wire.bytes(streamToken))] }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            streamToken = try object.optionalBytes("streamToken", maxBytes: limits.maxTokenBytes)
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }

    /// `write`: a batch of mutations to commit atomically, exactly once.
    ///
    /// ```json
    /// {"type": "write", "clientId": "5f0c…", "batchId": 7,
    ///  "mutations": [{"path": "counters/c", "kind": "patch", "data": {}, "mask": [],
    ///                 "transforms": [{"field": "n", "op": "increment", "operand": 1}]}],
    ///  "streamToken": "AQ…"}
    /// ```
    /// `(clientId, batchId)` identifies the batch: the server commits it at most once and
    /// answers a repeated one with the stored `writeResult` or `writeError`. The client id must
    /// be the one of the connection's `hello`. At most ``FrameLimits/maxWritesPerBatch``
    /// mutations; each is validated as the server applies it (document limits, masks,
    /// transforms).
    public struct Write: Sendable, Hashable, Codable, WireMessage {
        /// The client that queued the batch.
        public var clientID: String
        /// The batch's id in the client's queue.
        public var batchID: Int
        /// The mutations, applied in order.
        public var mutations: [Mutation]
        /// The client's last stream token (informational).
        public var streamToken: [UInt8]?

        /// Creates the message as given; nothing is checked until a ``FrameDecoder`` reads its
        /// frame.
        public init(clientID: String, batchID: Int, mutations: [Mutation], streamToken: [UInt8]? = nil) {
            self.clientID = clientID
            self.batchID = batchID
            self.mutations = mutations
            self.streamToken = streamToken
        }

        static let wireType = "write"
        static let wireFieldNames: Set<String> = ["clientId", "batchId", "mutations", "streamToken"]

        var wireFields: [(String, Value?)] {
            [("clientId", .string(clientID)), ("batchId", .integer(Int64(batchID))),
             ("mutations", .array(mutations.map(\.wireValue))), ("streamToken", Wire.bytes(streamToken))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            clientID = try Wire.clientID(try object.string("clientId"), at: object.at("clientId"), limits: limits)
            batchID = try object.int("batchId", in: 0...Int64.max)
            mutations = try Wire.mutations(in: object, limits: limits)
            streamToken = try object.optionalBytes("streamToken", maxBytes: limits.maxTokenBytes)
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}

extension Wire {
    /// Reads the `mutations` member of a batch: at most ``FrameLimits/maxWritesPerBatch``, each
    /// validated as the server applies it.
    static func mutations(in object: WireObject, limits: FrameLimits) throws(DocError) -> [Mutation] {
        let values = try object.array("mutations")
        guard values.count <= limits.maxWritesPerBatch else {
            throw Wire.error("a batch has at most \(limits.maxWritesPerBatch) writes, this one has \(values.count)",
                             at: object.at("mutations"))
        }
        var mutations: [Mutation] = []
        mutations.reserveCapacity(values.count)
        for (i, v) in values.enumerated() {
            mutations.append(try Mutation(wire: v, at: object.at("mutations") + "[\(i)]"))
        }
        return mutations
    }
}
