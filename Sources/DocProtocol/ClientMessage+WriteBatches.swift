public import DocModel

extension ClientMessage {
    /// `writeBatches`: several queued batches in one frame, each committed atomically and
    /// exactly once, as if each had come in its own `write` frame, in order.
    ///
    /// ```json
    /// {"type": "writeBatches", "clientId": "5f0c…",
    ///  "batches": [{"batchId": 7, "mutations": [{"path": "items/a", "kind": "set", "data": {"n": 1}}]},
    ///              {"batchId": 8, "mutations": [{"path": "items/b", "kind": "delete"}]}],
    ///  "streamToken": "AQ…"}
    /// ```
    /// The server answers with one ``ServerMessage/WriteResults`` frame: one answer per batch,
    /// in order. Each batch is validated as in `write` (at most
    /// ``FrameLimits/maxWritesPerBatch`` mutations, each as the server applies it); the frame
    /// holds 1…``FrameLimits/maxBatchesPerFrame`` batches with strictly increasing batch ids.
    /// A frame that fails validation is refused as a whole: no batch of it is applied.
    public struct WriteBatches: Sendable, Hashable, Codable, WireMessage {
        /// One batch of the frame.
        public struct Batch: Sendable, Hashable {
            /// The batch's id in the client's queue.
            public var batchID: Int
            /// The mutations, applied in order, all or nothing.
            public var mutations: [Mutation]

            /// Creates a batch as given; its id must be non-negative and above the previous batch's
            /// for the frame to be accepted.
            public init(batchID: Int, mutations: [Mutation]) {
                self.batchID = batchID
                self.mutations = mutations
            }

            var wireValue: Value {
                Wire.object([("batchId", .integer(Int64(batchID))), ("mutations", .array(mutations.map(\.wireValue)))])
            }

            /// Reads one element of `batches` (at `path`).
            init(wire value: Value, at path: String, limits: FrameLimits) throws(DocError) {
                let object = try WireObject(value, at: path)
                try object.allowOnly(["batchId", "mutations"])
                batchID = try object.int("batchId", in: 0...Int64.max)
                mutations = try Wire.mutations(in: object, limits: limits)
            }
        }

        /// The client that queued the batches (the connection's).
        public var clientID: String
        /// The batches, in queue order (strictly increasing ids).
        public var batches: [Batch]
        /// The client's last stream token (informational).
        public var streamToken: [UInt8]?

        /// Creates the message as given; nothing is checked until a ``FrameDecoder`` reads its
        /// frame.
        public init(clientID: String, batches: [Batch], streamToken: [UInt8]? = nil) {
            self.clientID = clientID
            self.batches = batches
            self.streamToken = streamToken
        }

        static let wireType = "writeBatches"
        static let wireFieldNames: Set<String> = ["clientId", "batches", "streamToken"]

        var wireFields: [(String, Value?)] {
            [("clientId", .string(clientID)), ("batches", .array(batches.map(\.wireValue))),
             ("streamToken", Wire.bytes(streamToken))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            clientID = try Wire.clientID(try object.string("clientId"), at: object.at("clientId"), limits: limits)
            let values = try object.array("batches")
            guard !values.isEmpty, values.count <= limits.maxBatchesPerFrame else {
                throw Wire.error("a writeBatches frame holds 1…\(limits.maxBatchesPerFrame) batches, this one has \(values.count)",
                                 at: object.at("batches"))
            }
            var batches: [Batch] = []
            batches.reserveCapacity(values.count)
            for (i, value) in values.enumerated() {
                let batch = try Batch(wire: value, at: object.at("batches") + "[\(i)]", limits: limits)
                if let previous = batches.last, batch.batchID <= previous.batchID {
                    throw Wire.error("batch ids must increase within a frame: \(batch.batchID) follows \(previous.batchID)",
                                     at: object.at("batches") + "[\(i)].batchId")
                }
                batches.append(batch)
            }
            self.batches = batches
            streamToken = try object.optionalBytes("streamToken", maxBytes: limits.maxTokenBytes)
        }

        /// The batch a refused frame is to be answered for: the first batch whose own content
        /// is invalid, when the client id and its batch id can be read (`nil` otherwise, or when
        /// the fault is in the frame around the batches).
        static func culprit(of object: WireObject, limits: FrameLimits) -> (clientID: String, batchID: Int)? {
            guard case .string(let clientID)? = object.fields["clientId"],
                  (try? Wire.clientID(clientID, at: "", limits: limits)) != nil,
                  case .array(let values)? = object.fields["batches"]
            else { return nil }
            for (i, value) in values.enumerated() {
                do throws(DocError) {
                    _ = try Batch(wire: value, at: "batches[\(i)]", limits: limits)
                } catch {
                    guard case .map(let members) = value, case .integer(let batchID)? = members["batchId"], batchID >= 0 else {
                        return nil
                    }
                    return (clientID, Int(batchID))
                }
            }
            return nil
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}
