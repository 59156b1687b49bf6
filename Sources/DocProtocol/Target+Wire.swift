internal import DocModel

// A query target on the wire (DocModel's `Target`, the form the server runs):
//   {"path": "rooms/r1/messages",            collection path, document path, or the parent of
//                                            a collection group ("" for the root)
//    "collectionGroup": "messages",          optional
//    "filters": [F, …],                      optional; all must match
//    "orderBy": [{"field": "sentAt", "direction": "desc"}, …],   optional; direction defaults
//                                            to "asc"; `__name__` is appended when missing
//    "limit": 50,                            optional, 1…2147483647
//    "limitType": "first" | "last",          optional, default "first"; "last" means the
//                                            query form of limit(toLast:): order and cursors
//                                            are flipped into the target form when read
//    "startAt": {"values": […], "inclusive": true},   optional cursors, in target order
//    "endAt": {"values": […], "inclusive": false},
//    "includeDeleted": false}                optional; tombstones match only when true
// A filter F is a field filter {"field": "age", "op": ">=", "value": 18} (ops: < <= == != >=
// > array-contains array-contains-any in not-in) or a composite {"op": "and"|"or",
// "filters": [F, …]}.

extension Target {
    /// The wire form (always the target form: limit type "first").
    var wireValue: Value {
        Wire.object([
            ("path", .string(path.canonicalString)),
            ("collectionGroup", collectionGroup.map { .string($0) }),
            ("filters", filters.isEmpty ? nil : .array(filters.map(\.wireValue))),
            ("orderBy", orderBys.isEmpty ? nil : .array(orderBys.map(\.wireValue))),
            ("limit", limit.map { .integer(Int64($0)) }),
            ("startAt", startAt.map(\.wireValue)),
            ("endAt", endAt.map(\.wireValue)),
            ("includeDeleted", includeDeleted ? .boolean(true) : nil),
        ])
    }

    /// Reads and validates a target (see the format above and ``FrameLimits``).
    init(wire value: Value, at path: String, limits: FrameLimits) throws(DocError) {
        let object = try WireObject(value, at: path)
        try object.allowOnly([
            "path", "collectionGroup", "filters", "orderBy", "limit", "limitType", "startAt", "endAt",
            "includeDeleted",
        ])
        let resourcePath = try Wire.resourcePath(try object.string("path"), at: object.at("path"))
        let group = try object.optionalString("collectionGroup")
        if let group {
            guard !group.isEmpty, !group.contains("/") else {
                throw Wire.error("a collection group is a non-empty collection id without '/'", at: object.at("collectionGroup"))
            }
            _ = try Wire.resourcePath(group, at: object.at("collectionGroup"))
            guard resourcePath.count % 2 == 0 else {
                throw Wire.error("a collection group is searched under the root or a document, but \"\(resourcePath)\" is a collection",
                                 at: object.at("path"))
            }
        } else if resourcePath.isEmpty {
            throw Wire.error("a target needs a collection or document path, or a collection group", at: object.at("path"))
        }

        var filterCount = 0
        var filters: [Filter] = []
        for (i, f) in try object.optionalArray("filters").enumerated() {
            filters.append(try Filter(wire: f, at: object.at("filters") + "[\(i)]", count: &filterCount, limits: limits))
        }

        var orderBys: [OrderBy] = []
        for (i, o) in try object.optionalArray("orderBy").enumerated() {
            let at = object.at("orderBy") + "[\(i)]"
            let orderBy = try OrderBy(wire: o, at: at)
            guard !orderBys.contains(where: { $0.field == orderBy.field }) else {
                throw Wire.error("the target is already ordered by \(orderBy.field)", at: at)
            }
            orderBys.append(orderBy)
        }
        guard orderBys.count <= limits.maxOrderBys else {
            throw Wire.error("a target has at most \(limits.maxOrderBys) order-bys, this one has \(orderBys.count)",
                             at: object.at("orderBy"))
        }
        if !orderBys.contains(where: { $0.field.isDocumentID }) {
            orderBys.append(OrderBy(.documentID, orderBys.last?.direction ?? .ascending))
        }

        let limit = try object.optionalInt("limit", in: 1...Int64(Int32.max))
        let limitTypeName = try object.optionalString("limitType") ?? "first"
        guard limitTypeName == "first" || limitTypeName == "last" else {
            throw Wire.error("limitType must be \"first\" or \"last\", found \"\(limitTypeName)\"", at: object.at("limitType"))
        }
        let isLimitToLast = limitTypeName == "last"
        if isLimitToLast && limit == nil {
            throw Wire.error("limitType \"last\" needs a limit", at: object.at("limitType"))
        }

        var startAt = try object.optionalObject("startAt").map { o throws(DocError) in try Bound(wire: o, orderBys: orderBys) }
        var endAt = try object.optionalObject("endAt").map { o throws(DocError) in try Bound(wire: o, orderBys: orderBys) }
        if isLimitToLast {
            // Query form → target form, as `Query.toTarget()` does.
            orderBys = orderBys.map(\.flipped)
            swap(&startAt, &endAt)
        }
        self.init(
            path: resourcePath, collectionGroup: group, filters: filters, orderBys: orderBys, limit: limit,
            startAt: startAt, endAt: endAt, includeDeleted: try object.bool("includeDeleted", default: false))
    }
}

extension Filter {
    var wireValue: Value {
        switch self {
        case .field(let f):
            return .map(["field": .string(f.field.canonicalString), "op": .string(f.op.rawValue), "value": f.value])
        case .composite(let c):
            return .map(["op": .string(c.op.rawValue), "filters": .array(c.filters.map(\.wireValue))])
        }
    }

    init(wire value: Value, at path: String, count: inout Int, limits: FrameLimits) throws(DocError) {
        let object = try WireObject(value, at: path)
        let opName = try object.string("op")
        if let compositeOp = CompositeFilter.Operator(rawValue: opName) {
            try object.allowOnly(["op", "filters"])
            let members = try object.array("filters")
            guard !members.isEmpty else {
                throw Wire.error("a composite filter needs at least one filter", at: object.at("filters"))
            }
            var filters: [Filter] = []
            for (i, member) in members.enumerated() {
                filters.append(try Filter(wire: member, at: object.at("filters") + "[\(i)]", count: &count, limits: limits))
            }
            self = .composite(CompositeFilter(compositeOp, filters))
            return
        }
        try object.allowOnly(["field", "op", "value"])
        guard let op = FieldFilter.Operator(rawValue: opName) else {
            throw Wire.error("unknown filter operator \"\(opName)\"", at: object.at("op"))
        }
        count += 1
        guard count <= limits.maxFilters else {
            throw Wire.error("a target has at most \(limits.maxFilters) field filters", at: path)
        }
        let field = try Wire.fieldPath(try object.string("field"), at: object.at("field"))
        let filterValue = try object.valueAllowingNull("value")
        let valueAt = object.at("value")
        try Wire.checkDepth(filterValue, at: valueAt)
        if op.takesValueList {
            guard case .array(let values) = filterValue, !values.isEmpty else {
                throw Wire.error("'\(op)' needs a non-empty array of values", at: valueAt)
            }
            guard values.count <= limits.maxDisjunctionValues else {
                throw Wire.error("'\(op)' takes at most \(limits.maxDisjunctionValues) values, found \(values.count)", at: valueAt)
            }
        } else if filterValue.isNaN && op != .equal && op != .notEqual {
            throw Wire.error("NaN only supports '==' and '!=', not '\(op)'", at: valueAt)
        }
        if field.isDocumentID {
            if op.isArrayOperator {
                throw Wire.error("'\(op)' cannot be used on __name__ (document ids are not arrays)", at: object.at("op"))
            }
            let keys = op.takesValueList ? (filterValue.arrayValue ?? []) : [filterValue]
            for key in keys {
                guard case .reference = key else {
                    throw Wire.error("__name__ filters compare with references ({\"$ref\": \"…\"}), found \(Wire.describe(key))", at: valueAt)
                }
            }
        }
        self = .field(FieldFilter(field, op, filterValue))
    }
}

extension OrderBy {
    var wireValue: Value {
        .map(["field": .string(field.canonicalString), "direction": .string(direction.rawValue)])
    }

    init(wire value: Value, at path: String) throws(DocError) {
        let object = try WireObject(value, at: path)
        try object.allowOnly(["field", "direction"])
        let field = try Wire.fieldPath(try object.string("field"), at: object.at("field"))
        let name = try object.optionalString("direction") ?? "asc"
        guard let direction = OrderBy.Direction(rawValue: name) else {
            throw Wire.error("direction must be \"asc\" or \"desc\", found \"\(name)\"", at: object.at("direction"))
        }
        self.init(field, direction)
    }
}

extension Bound {
    var wireValue: Value {
        .map(["values": .array(position), "inclusive": .boolean(inclusive)])
    }

    init(wire object: WireObject, orderBys: [OrderBy]) throws(DocError) {
        try object.allowOnly(["values", "inclusive"])
        let values = try object.array("values")
        guard !values.isEmpty else {
            throw Wire.error("a cursor needs at least one value", at: object.at("values"))
        }
        guard values.count <= orderBys.count else {
            throw Wire.error("a cursor has \(values.count) values but the target has \(orderBys.count) order-bys",
                             at: object.at("values"))
        }
        for (i, (v, orderBy)) in zip(values, orderBys).enumerated() {
            let at = object.at("values") + "[\(i)]"
            try Wire.checkDepth(v, at: at)
            if orderBy.field.isDocumentID {
                guard case .reference = v else {
                    throw Wire.error("a cursor value for __name__ is a reference ({\"$ref\": \"…\"}), found \(Wire.describe(v))", at: at)
                }
            }
        }
        self.init(position: values, inclusive: try object.bool("inclusive"))
    }
}
