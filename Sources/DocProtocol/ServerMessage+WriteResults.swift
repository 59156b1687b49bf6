public import DocModel

extension ServerMessage {
    /// `writeResults`: the answer to a `writeBatches` frame, one answer per batch, in the
    /// frame's order. A committed batch has its commit version and one result per mutation
    /// (as in `writeResult`); a batch that was not committed has the error (as in
    /// `writeError`: a permanent rejection, remembered for the batch, or a transient failure to
    /// send again).
    ///
    /// ```json
    /// {"type": "writeResults", "clientId": "5f0c…",
    ///  "batches": [{"batchId": 7, "commitVersion": 1714564800000000, "results": [{"updateVersion": 1714564800000000}]},
    ///              {"batchId": 8, "error": {"code": 7, "name": "permissionDenied", "message": "…"}}],
    ///  "streamToken": "AQ…"}
    /// ```
    public struct WriteResults: Sendable, Hashable, Codable, WireMessage {
        /// The answer for one batch.
        public enum Answer: Sendable, Hashable {
            /// The batch was committed at `commitVersion` (now, or earlier for a re-sent batch).
            case committed(batchID: Int, commitVersion: SnapshotVersion, results: [MutationResult])
            /// The batch was not committed: a permanent rejection or a transient failure.
            case failed(batchID: Int, error: DocError)

            /// The batch answered.
            public var batchID: Int {
                switch self {
                case .committed(let id, _, _), .failed(let id, _): return id
                }
            }

            var wireValue: Value {
                switch self {
                case .committed(let batchID, let version, let results):
                    return Wire.object([("batchId", .integer(Int64(batchID))), ("commitVersion", Wire.version(version)),
                                        ("results", Wire.mutationResults(results))])
                case .failed(let batchID, let error):
                    return Wire.object([("batchId", .integer(Int64(batchID))), ("error", error.wireValue)])
                }
            }

            init(wire value: Value, at path: String) throws(DocError) {
                let object = try WireObject(value, at: path)
                try object.allowOnly(["batchId", "commitVersion", "results", "error"])
                let batchID = try object.int("batchId", in: 0...Int64.max)
                if object.has("error") {
                    guard !object.has("commitVersion"), !object.has("results") else {
                        throw Wire.error("an answer has either \"error\" or \"commitVersion\" and \"results\"", at: path)
                    }
                    self = .failed(batchID: batchID, error: try DocError(wire: try object.value("error"), at: object.at("error")))
                } else {
                    self = .committed(batchID: batchID, commitVersion: try object.version("commitVersion"),
                                      results: try Wire.mutationResults(in: object))
                }
            }
        }

        /// The client that sent the batches.
        public var clientID: String
        /// One answer per batch of the frame, in order.
        public var answers: [Answer]
        /// The stream token after these answers.
        public var streamToken: [UInt8]?

        /// Creates the message as given; a decoder accepts 1…``FrameLimits/maxBatchesPerFrame``
        /// answers.
        public init(clientID: String, answers: [Answer], streamToken: [UInt8]? = nil) {
            self.clientID = clientID
            self.answers = answers
            self.streamToken = streamToken
        }

        static let wireType = "writeResults"
        static let wireFieldNames: Set<String> = ["clientId", "batches", "streamToken"]

        var wireFields: [(String, Value?)] {
            [("clientId", .string(clientID)), ("batches", .array(answers.map(\.wireValue))),
             ("streamToken", Wire.bytes(streamToken))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            clientID = try Wire.clientID(try object.string("clientId"), at: object.at("clientId"), limits: limits)
            let values = try object.array("batches")
            guard !values.isEmpty, values.count <= limits.maxBatchesPerFrame else {
                throw Wire.error("a writeResults frame holds 1…\(limits.maxBatchesPerFrame) answers, this one has \(values.count)",
                                 at: object.at("batches"))
            }
            var answers: [Answer] = []
            answers.reserveCapacity(values.count)
            for (i, value) in values.enumerated() {
                answers.append(try Answer(wire: value, at: object.at("batches") + "[\(i)]"))
            }
            self.answers = answers
            streamToken = try object.optionalBytes("streamToken", maxBytes: limits.maxTokenBytes)
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}
