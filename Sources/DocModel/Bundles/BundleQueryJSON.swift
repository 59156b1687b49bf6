/// The `bundledQuery` of a named query — `{"parent", "structuredQuery", "limitType"}`, the
/// query in the form of Firestore's `StructuredQuery` JSON — read into a ``Query`` and written
/// from one.
///
/// Read: `from` (one collection, or a collection group with `allDescendants`), `where`
/// (`fieldFilter`, `unaryFilter` — `IS_NULL`, `IS_NAN`, `IS_NOT_NULL`, `IS_NOT_NAN` —, and
/// `compositeFilter` with `AND` or `OR`), `orderBy`, `startAt` / `endAt` (`values`, `before`),
/// `limit` (a number or `{"value": n}`), `limitType` (`FIRST`, `LAST`). `select` and `offset`
/// are refused, as Firestore's clients refuse them in bundles. The query is built with the
/// data model's builders, so it obeys the same rules as a query written in code. One extension:
/// `"includeDeleted": true` in the `bundledQuery` keeps tombstoned documents (Firestore has no
/// tombstones and ignores the member).
enum BundleQueryJSON {
    static func bundledQuery(_ node: BundleJSON.Node) throws(DocError) -> Query {
        let structured = try node.required("structuredQuery")
        _ = try structured.members()
        if try structured.member("select") != nil {
            throw structured.fail("queries with 'select' are not supported in bundles")
        }
        if try structured.member("offset") != nil {
            throw structured.fail("queries with 'offset' are not supported in bundles")
        }
        let parent = try BundleJSON.resourcePath(node.required("parent"))
        let from = try structured.required("from").array()
        guard from.count == 1, let source = from.first else {
            throw structured.fail("'from' must name exactly one collection, it names \(from.count)")
        }
        let collectionID = try source.required("collectionId").string()
        let allDescendants = try source.optional("allDescendants")?.bool() ?? false
        var query: Query
        do {
            if allDescendants {
                query = try Query(collectionGroup: collectionID, parent: parent)
            } else {
                query = try Query(collection: parent.appending(collectionID))
            }
        } catch {
            throw source.fail(error.message)
        }

        if let filter = try structured.optional("where") {
            // A top-level AND is the query's list of filters (as Firestore's clients read it).
            let decoded = try self.filter(filter)
            let members: [Filter]
            if case .composite(let c) = decoded, c.op == .and { members = c.filters } else { members = [decoded] }
            for member in members {
                do { query = try query.filter(member) } catch { throw filter.fail(error.message) }
            }
        }
        for item in try structured.optional("orderBy")?.array() ?? [] {
            let field = try fieldReference(item.required("field"))
            let direction = try item.optional("direction")?.string() ?? "ASCENDING"
            guard direction == "ASCENDING" || direction == "DESCENDING" else {
                throw item.fail("direction \"\(direction)\" is not ASCENDING or DESCENDING")
            }
            do { query = try query.order(by: field, descending: direction == "DESCENDING") } catch { throw item.fail(error.message) }
        }
        let limitType = try node.optional("limitType")?.string() ?? "FIRST"
        guard limitType == "FIRST" || limitType == "LAST" else {
            throw node.fail("limitType \"\(limitType)\" is not FIRST or LAST")
        }
        if let limitNode = try structured.optional("limit") {
            var valueNode = limitNode
            if case .object = limitNode.node.kind { valueNode = try limitNode.required("value") }
            let limit = try valueNode.int(in: 1...Int64(Query.maxLimit))
            query = try limitType == "LAST" ? query.limit(toLast: Int(limit)) : query.limit(to: Int(limit))
        }
        for (key, inclusiveWhenBefore) in [("startAt", true), ("endAt", false)] {
            guard let cursor = try structured.optional(key) else { continue }
            var values: [Value] = []
            for item in try cursor.optional("values")?.array() ?? [] { values.append(try BundleJSON.value(item)) }
            guard !values.isEmpty else { continue }
            let before = try cursor.optional("before")?.bool() ?? false
            let inclusive = before == inclusiveWhenBefore
            do {
                let bound = try query.bound(values: values, inclusive: inclusive, method: key)
                query = query.with { key == "startAt" ? $0.setStart(bound) : $0.setEnd(bound) }
            } catch {
                throw cursor.fail(error.message)
            }
        }
        if try node.optional("includeDeleted")?.bool() == true { query = query.includingDeleted() }
        do {
            try query.validateForExecution()
        } catch {
            throw node.fail(error.message)
        }
        return query
    }

    static func fieldReference(_ node: BundleJSON.Node) throws(DocError) -> FieldPath {
        let text = try node.required("fieldPath").string()
        do {
            return try FieldPath(text)
        } catch {
            throw node.fail(error.message)
        }
    }

    static let operators: [String: FieldFilter.Operator] = [
        "LESS_THAN": .lessThan, "LESS_THAN_OR_EQUAL": .lessThanOrEqual, "EQUAL": .equal, "NOT_EQUAL": .notEqual,
        "GREATER_THAN": .greaterThan, "GREATER_THAN_OR_EQUAL": .greaterThanOrEqual, "ARRAY_CONTAINS": .arrayContains,
        "IN": .in, "ARRAY_CONTAINS_ANY": .arrayContainsAny, "NOT_IN": .notIn,
    ]

    static func operatorName(_ op: FieldFilter.Operator) -> String {
        operators.first { $0.value == op }!.key
    }

    static func filter(_ node: BundleJSON.Node) throws(DocError) -> Filter {
        if let field = try node.optional("fieldFilter") {
            let path = try fieldReference(field.required("field"))
            let opName = try field.required("op").string()
            guard let op = operators[opName] else { throw field.fail("unknown operator \"\(opName)\"") }
            return .where(path, op, try BundleJSON.value(field.required("value")))
        }
        if let unary = try node.optional("unaryFilter") {
            let path = try fieldReference(unary.required("field"))
            switch try unary.required("op").string() {
            case "IS_NULL": return .where(path, .equal, .null)
            case "IS_NAN": return .where(path, .equal, .double(.nan))
            case "IS_NOT_NULL": return .where(path, .notEqual, .null)
            case "IS_NOT_NAN": return .where(path, .notEqual, .double(.nan))
            case let other: throw unary.fail("unknown unary operator \"\(other)\"")
            }
        }
        if let composite = try node.optional("compositeFilter") {
            let opName = try composite.required("op").string()
            let op: CompositeFilter.Operator
            switch opName {
            case "AND": op = .and
            case "OR": op = .or
            default: throw composite.fail("unknown composite operator \"\(opName)\"")
            }
            var members: [Filter] = []
            for item in try composite.optional("filters")?.array() ?? [] { members.append(try filter(item)) }
            return .composite(CompositeFilter(op, members))
        }
        throw node.fail("a filter needs fieldFilter, unaryFilter or compositeFilter")
    }
}
