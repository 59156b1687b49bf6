/// Firestore's index configuration file (`firestore.indexes.json`, as `firebase deploy` reads
/// it) for the composite indexes of a server (`docctl serve --indexes FILE`) or a client:
///
/// ```json
/// {"indexes": [{"collectionGroup": "items", "queryScope": "COLLECTION",
///               "fields": [{"fieldPath": "category", "order": "ASCENDING"},
///                          {"fieldPath": "score", "order": "DESCENDING"}]}],
///  "fieldOverrides": []}
/// ```
///
/// Every field already has a single-field index, so `fieldOverrides` is accepted and
/// ignored. What doccache cannot serve is refused rather than ignored: a `COLLECTION_GROUP`
/// scope, an `arrayConfig` field.
extension CompositeIndex {
    /// The indexes of a configuration file's text.
    ///
    /// - Throws: `invalidArgument` naming what is wrong and where (`indexes[2].fields[0].order`):
    ///   text that is not JSON, a missing or mistyped member, an unknown member, a scope or
    ///   field option doccache does not serve, or an index ``init(collectionGroup:fields:)``
    ///   refuses.
    public static func configuration(json: String) throws(DocError) -> [CompositeIndex] {
        let root: Value
        do {
            root = try Value(json: json)
        } catch {
            throw DocError(.invalidArgument, "the index configuration is not JSON: \(error.message)")
        }
        let top = try object(root, at: "the index configuration")
        try allowOnly(["indexes", "fieldOverrides"], in: top, at: "the index configuration")
        guard let list = top["indexes"] else { return [] }
        guard case .array(let entries) = list else { throw invalid("indexes", "must be an array") }
        var out: [CompositeIndex] = []
        for (i, entry) in entries.enumerated() {
            out.append(try index(entry, at: "indexes[\(i)]"))
        }
        return out
    }

    /// One entry of ``configuration(json:)``'s `indexes` array.
    ///
    /// - Throws: `invalidArgument` as ``configuration(json:)`` does, located at `location`.
    package static func configurationEntry(json: String, at location: String = "index") throws(DocError) -> CompositeIndex {
        let value: Value
        do {
            value = try Value(json: json)
        } catch {
            throw DocError(.invalidArgument, "\(location) is not JSON: \(error.message)")
        }
        return try index(value, at: location)
    }

    /// The index as one entry of a configuration file's `indexes` array (members in a fixed
    /// order: equal indexes have equal text).
    package var configurationJSON: String {
        let fieldList = fields.map { field -> Value in
            .map(["fieldPath": .string(field.path.canonicalString),
                  "order": .string(field.direction == .ascending ? "ASCENDING" : "DESCENDING")])
        }
        return Value.map(["collectionGroup": .string(collectionGroup), "queryScope": .string("COLLECTION"),
                          "fields": .array(fieldList)]).jsonString
    }

    private static func index(_ value: Value, at location: String) throws(DocError) -> CompositeIndex {
        let members = try object(value, at: location)
        try allowOnly(["collectionGroup", "queryScope", "fields"], in: members, at: location)
        guard case .string(let group)? = members["collectionGroup"] else {
            throw invalid("\(location).collectionGroup", "must be a collection id (a string)")
        }
        switch members["queryScope"] {
        case nil, .string("COLLECTION")?:
            break
        case .string("COLLECTION_GROUP")?:
            throw invalid("\(location).queryScope", "COLLECTION_GROUP is not supported: doccache serves collection group queries without composite indexes; use COLLECTION")
        default:
            throw invalid("\(location).queryScope", "must be \"COLLECTION\"")
        }
        guard case .array(let fieldValues)? = members["fields"] else {
            throw invalid("\(location).fields", "must be an array of {\"fieldPath\", \"order\"} objects")
        }
        var fields: [Field] = []
        for (j, fieldValue) in fieldValues.enumerated() {
            let at = "\(location).fields[\(j)]"
            let field = try object(fieldValue, at: at)
            if field["arrayConfig"] != nil {
                throw invalid("\(at).arrayConfig", "array-contains composite indexes are not supported (array-contains filters use the field's own array index); give an \"order\"")
            }
            try allowOnly(["fieldPath", "order"], in: field, at: at)
            guard case .string(let pathText)? = field["fieldPath"] else { throw invalid("\(at).fieldPath", "must be a field path (a string)") }
            let path: FieldPath
            do {
                path = try FieldPath(pathText)
            } catch {
                throw invalid("\(at).fieldPath", error.message)
            }
            let direction: OrderBy.Direction
            switch field["order"] {
            case .string("ASCENDING")?: direction = .ascending
            case .string("DESCENDING")?: direction = .descending
            default: throw invalid("\(at).order", "must be \"ASCENDING\" or \"DESCENDING\"")
            }
            fields.append(Field(path: path, direction))
        }
        do {
            return try CompositeIndex(collectionGroup: group, fields: fields)
        } catch {
            throw invalid(location, error.message)
        }
    }

    private static func object(_ value: Value, at location: String) throws(DocError) -> [String: Value] {
        guard case .map(let members) = value else { throw invalid(location, "must be a JSON object") }
        return members
    }

    private static func allowOnly(_ known: Set<String>, in members: [String: Value], at location: String) throws(DocError) {
        if let unknown = members.keys.filter({ !known.contains($0) }).sorted().first {
            throw invalid("\(location).\(unknown)", "is not a known member (known: \(known.sorted().joined(separator: ", ")))")
        }
    }

    private static func invalid(_ location: String, _ problem: String) -> DocError {
        DocError(.invalidArgument, "\(location) \(problem)")
    }
}
