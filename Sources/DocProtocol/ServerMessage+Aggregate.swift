public import DocModel

extension ServerMessage {
    /// `aggregateResult`: the answer to an `aggregate` request: the values by alias as of
    /// `readTime` (committed data), or the error that refused it (`permissionDenied`,
    /// `invalidArgument`, …; the connection stays open).
    ///
    /// ```json
    /// {"type": "aggregateResult", "requestId": 1, "readTime": 1714564800000000,
    ///  "result": {"count": 12, "total": 3450}}
    /// {"type": "aggregateResult", "requestId": 2, "error": {"code": 7, "name": "permissionDenied", "message": "…"}}
    /// ```
    public struct AggregateResult: Sendable, Hashable, Codable, WireMessage {
        /// The request answered.
        public var requestID: Int
        /// The values by alias (integers, doubles, `null` for an average of nothing); empty
        /// with an error.
        public var result: [String: Value]
        /// The commit version the values are read at; `nil` with an error.
        public var readTime: SnapshotVersion?
        /// Why the request was refused, if it was.
        public var error: DocError?

        /// The answer to a request that succeeded: its values by alias, read at `readTime`.
        public init(requestID: Int, result: [String: Value], readTime: SnapshotVersion) {
            self.requestID = requestID
            self.result = result
            self.readTime = readTime
            self.error = nil
        }

        /// The answer to a refused request: no values and no read time.
        public init(requestID: Int, error: DocError) {
            self.requestID = requestID
            self.result = [:]
            self.readTime = nil
            self.error = error
        }

        static let wireType = "aggregateResult"
        static let wireFieldNames: Set<String> = ["requestId", "result", "readTime", "error"]

        var wireFields: [(String, Value?)] {
            [("requestId", .integer(Int64(requestID))), ("result", error == nil ? .map(result) : nil),
             ("readTime", readTime.map(Wire.version)), ("error", error?.wireValue)]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            requestID = try object.int("requestId", in: 0...Int64(Int32.max))
            if let error = object.optionalValue("error") {
                self.error = try DocError(wire: error, at: object.at("error"))
                result = [:]
                readTime = nil
            } else {
                guard case .map(let values) = try object.value("result") else {
                    throw Wire.error("expected an object of results", at: object.at("result"))
                }
                result = values
                readTime = try object.version("readTime")
                error = nil
            }
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}
