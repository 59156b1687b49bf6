public import DocModel

extension ClientMessage {
    /// `aggregate`: count, sum or average a query's results on the server, once.
    ///
    /// ```json
    /// {"type": "aggregate", "requestId": 1, "target": {"path": "invoices", "filters": […]},
    ///  "aggregations": [{"alias": "count", "op": "count"},
    ///                   {"alias": "total", "op": "sum", "field": "amount"}]}
    /// ```
    /// The target may be unbounded (only the results travel). The server answers with one
    /// `aggregateResult` of the same `requestId`. The rules decide as for a `list` of the
    /// target (they are not filters).
    public struct Aggregate: Sendable, Hashable, Codable, WireMessage {
        /// The client's id for this request, echoed in the answer.
        public var requestID: Int
        /// The query aggregated (a query target; a limit, if any, caps the documents counted).
        public var target: Target
        /// 1…``AggregateField/maxPerRequest`` aggregations, aliases unique.
        public var aggregations: [AggregateField]

        /// Creates the message as given; ``FrameDecoder`` checks the aggregations
        /// (``AggregateField/validate(_:)``) and a `requestID` in 0…`Int32.max` when reading it.
        public init(requestID: Int, target: Target, aggregations: [AggregateField]) {
            self.requestID = requestID
            self.target = target
            self.aggregations = aggregations
        }

        static let wireType = "aggregate"
        static let wireFieldNames: Set<String> = ["requestId", "target", "aggregations"]

        var wireFields: [(String, Value?)] {
            [("requestId", .integer(Int64(requestID))), ("target", target.wireValue),
             ("aggregations", .array(aggregations.map { a in
                 Wire.object([("alias", .string(a.alias)), ("op", .string(a.operation.rawValue)),
                              ("field", a.field.map { .string($0.description) })])
             }))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            requestID = try object.int("requestId", in: 0...Int64(Int32.max))
            target = try Target(wire: try object.value("target"), at: object.at("target"), limits: limits)
            var aggregations: [AggregateField] = []
            for (i, value) in try object.array("aggregations").enumerated() {
                let at = object.at("aggregations") + "[\(i)]"
                let a = try WireObject(value, at: at)
                try a.allowOnly(["alias", "op", "field"])
                let name = try a.string("op")
                guard let operation = AggregateField.Operation(rawValue: name) else {
                    throw Wire.error("unknown aggregation \"\(name)\" (count, sum, average)", at: a.at("op"))
                }
                let field: FieldPath?
                if let text = try a.optionalString("field") {
                    do { field = try FieldPath(text) } catch { throw Wire.error(error.message, at: a.at("field")) }
                } else {
                    field = nil
                }
                do {
                    aggregations.append(try AggregateField(operation, field: field, alias: try a.string("alias")))
                } catch {
                    throw Wire.error(error.message, at: at)
                }
            }
            do { try AggregateField.validate(aggregations) } catch { throw Wire.error(error.message, at: object.at("aggregations")) }
            self.aggregations = aggregations
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}
