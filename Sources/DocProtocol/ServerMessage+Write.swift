public import DocModel

extension ServerMessage {
    /// `writeHandshake`: the write stream is open; batches may be sent.
    ///
    /// ```json
    /// {"type": "writeHandshake", "streamToken": "AQ…"}
    /// ```
    public struct WriteHandshakeResponse: Sendable, Hashable, Codable, WireMessage {
        /// A token the client stores and sends back with its next handshake.
        public var streamToken: [UInt8]

        /// Creates the message; a decoder accepts a token of at most ``FrameLimits/maxTokenBytes``.
        public init(streamToken: [UInt8]) { self.streamToken = streamToken }

        static let wireType = "writeHandshake"
        static let wireFieldNames: Set<String> = ["streamToken"]
        var wireFields: [(String, Value?)] { [("streamToken", Wire.bytes(streamToken))] }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            guard let token = try object.optionalBytes("streamToken", maxBytes: limits.maxTokenBytes) else {
                throw Wire.error("missing field \"streamToken\"", at: object.path)
            }
            streamToken = token
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }

    /// `writeResult`: the batch was committed at `commitVersion` (now, or earlier when this
    /// answers a re-sent batch). One result per mutation, in order: the version the write
    /// gave its document and its transform results (server timestamps and increments with
    /// their values, `null` for array transforms).
    ///
    /// ```json
    /// {"type": "writeResult", "clientId": "5f0c…", "batchId": 7, "commitVersion": 1714564800000000,
    ///  "results": [{"updateVersion": 1714564800000000, "transformResults": [42]}], "streamToken": "AQ…"}
    /// ```
    public struct WriteResult: Sendable, Hashable, Codable, WireMessage {
        /// The client that sent the batch.
        public var clientID: String
        /// The batch answered.
        public var batchID: Int
        /// The version the batch was committed at.
        public var commitVersion: SnapshotVersion
        /// One result per mutation, in order.
        public var results: [MutationResult]
        /// The stream token after this answer.
        public var streamToken: [UInt8]?

        /// Creates the message as given; `results` should hold one result per mutation of the
        /// batch.
        public init(clientID: String, batchID: Int, commitVersion: SnapshotVersion, results: [MutationResult], streamToken: [UInt8]? = nil) {
            self.clientID = clientID
            self.batchID = batchID
            self.commitVersion = commitVersion
            self.results = results
            self.streamToken = streamToken
        }

        static let wireType = "writeResult"
        static let wireFieldNames: Set<String> = ["clientId", "batchId", "commitVersion", "results", "streamToken"]

        var wireFields: [(String, Value?)] {
            [("clientId", .string(clientID)), ("batchId", .integer(Int64(batchID))),
             ("commitVersion", Wire.version(commitVersion)),
             ("results", Wire.mutationResults(results)),
             ("streamToken", Wire.bytes(streamToken))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            clientID = try Wire.clientID(try object.string("clientId"), at: object.at("clientId"), limits: limits)
            batchID = try object.int("batchId", in: 0...Int64.max)
            commitVersion = try object.version("commitVersion")
            results = try Wire.mutationResults(in: object)
            streamToken = try object.optionalBytes("streamToken", maxBytes: limits.maxTokenBytes)
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }

    /// `writeError`: the batch was rejected as a whole and nothing of it was stored
    /// (permanent codes such as `failedPrecondition`, `notFound`, `alreadyExists`,
    /// `invalidArgument`, `permissionDenied`), or could not be committed now (transient codes
    /// such as `unavailable` or `aborted`: send it again later). A re-sent rejected batch gets
    /// the same rejection.
    ///
    /// ```json
    /// {"type": "writeError", "clientId": "5f0c…", "batchId": 8,
    ///  "error": {"code": 5, "name": "notFound", "message": "no document to update: accounts/a1", "location": "accounts/a1"}}
    /// ```
    public struct WriteError: Sendable, Hashable, Codable, WireMessage {
        /// The client that sent the batch.
        public var clientID: String
        /// The batch answered.
        public var batchID: Int
        /// Why the batch was rejected (or could not be committed now).
        public var error: DocError
        /// The stream token after this answer.
        public var streamToken: [UInt8]?

        /// Creates the answer rejecting batch `batchID` of `clientID` with `error`.
        public init(clientID: String, batchID: Int, error: DocError, streamToken: [UInt8]? = nil) {
            self.clientID = clientID
            self.batchID = batchID
            self.error = error
            self.streamToken = streamToken
        }

        static let wireType = "writeError"
        static let wireFieldNames: Set<String> = ["clientId", "batchId", "error", "streamToken"]

        var wireFields: [(String, Value?)] {
            [("clientId", .string(clientID)), ("batchId", .integer(Int64(batchID))), ("error", error.wireValue),
             ("streamToken", Wire.bytes(streamToken))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            clientID = try Wire.clientID(try object.string("clientId"), at: object.at("clientId"), limits: limits)
            batchID = try object.int("batchId", in: 0...Int64.max)
            error = try DocError(wire: try object.value("error"), at: object.at("error"))
            streamToken = try object.optionalBytes("streamToken", maxBytes: limits.maxTokenBytes)
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}

extension Wire {
    /// The `results` of a committed batch: one object per mutation, in order.
    static func mutationResults(_ results: [MutationResult]) -> Value {
        .array(results.map { r in
            Wire.object([("updateVersion", Wire.version(r.version)),
                         ("transformResults", r.transformResults.isEmpty ? nil : .array(r.transformResults))])
        })
    }

    /// Reads the `results` member of `object` (``mutationResults(_:)``).
    static func mutationResults(in object: WireObject) throws(DocError) -> [MutationResult] {
        var results: [MutationResult] = []
        for (i, v) in try object.array("results").enumerated() {
            let r = try WireObject(v, at: object.at("results") + "[\(i)]")
            try r.allowOnly(["updateVersion", "transformResults"])
            results.append(MutationResult(version: try r.version("updateVersion"), transformResults: try r.optionalArray("transformResults")))
        }
        return results
    }
}
