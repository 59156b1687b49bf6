internal import DocModel

/// One case of a conformance suite, turned into a rules request.
///
/// Writes are applied with DocModel's `Mutation.applyOnServer` at a commit version equal to
/// `request.time`, exactly as the server will: `{"$serverTimestamp": true}` becomes a server
/// timestamp transform (= `request.time`), `{"$increment": n}` an increment transform and
/// `{"$delete": true}` a field delete. A write whose precondition fails (an `update` of a
/// missing document, a `create` of an existing one) is a deny, as the client saw an error.
struct ConformanceCase {
    let name: String
    let op: String
    let path: ResourcePath
    let auth: RulesAuth?
    let data: [String: Value]?
    let query: RulesQuery?
    let store: [DocumentKey: Document]
    let time: Timestamp

    static func invalid(_ message: String) -> DocError { DocError(.invalidArgument, message) }

    init(_ m: [String: Value], seed: [String: Value], time: Timestamp) throws(DocError) {
        // Commit versions have microsecond precision; request.time must equal a server timestamp.
        self.time = Timestamp(microseconds: time.microseconds)
        name = m["name"]?.stringValue ?? "?"
        guard let op = m["op"]?.stringValue else { throw Self.invalid("missing 'op'") }
        guard ["get", "list", "create", "set", "update", "delete"].contains(op) else {
            throw Self.invalid("unknown op '\(op)'")
        }
        self.op = op
        guard let p = m["path"]?.stringValue else { throw Self.invalid("missing 'path'") }
        path = try ResourcePath(p)

        switch m["auth"] {
        case nil, .null?:
            auth = nil
        case .map(let a)?:
            guard let uid = a["uid"]?.stringValue else { throw Self.invalid("auth needs a 'uid'") }
            auth = RulesAuth(uid: uid, token: a["token"]?.mapValue ?? [:])
        default:
            throw Self.invalid("'auth' must be null or an object")
        }

        data = m["data"]?.mapValue
        if op == "list" {
            query = try Self.query(m["query"], collection: path)
        } else {
            query = nil
        }

        var documents: [DocumentKey: Document] = [:]
        let commit = SnapshotVersion(microseconds: self.time.microseconds - 1_000_000)
        for (k, v) in seed.merging(m["extraSeed"]?.mapValue ?? [:], uniquingKeysWith: { _, extra in extra }) {
            let key = try DocumentKey(k)
            guard case .map(let fields) = v else { throw Self.invalid("seed document \(k) is not an object") }
            var transforms: [FieldTransform] = []
            var deletes: [FieldPath] = []
            var clean: [String: Value] = [:]
            for (f, x) in fields {
                if let y = try Self.extract(x, at: [f], transforms: &transforms, deletes: &deletes) { clean[f] = y }
            }
            let (written, _) = try Mutation.set(key, ObjectValue(clean), transforms: transforms)
                .applyOnServer(nil, commitVersion: commit)
            if let d = written?.document { documents[key] = d }
        }
        store = documents
    }

    private static func query(_ v: Value?, collection: ResourcePath) throws(DocError) -> RulesQuery {
        guard case .map(let q)? = v else { return RulesQuery() }
        var out = RulesQuery()
        if let limit = q["limit"] {
            guard case .integer(let n) = limit else { throw invalid("query limit must be an integer") }
            out.limit = n
        }
        if let offset = q["offset"] {
            guard case .integer(let n) = offset else { throw invalid("query offset must be an integer") }
            out.offset = n
        }
        for w in q["where"]?.arrayValue ?? [] {
            guard let parts = w.arrayValue, parts.count == 3, let f = parts[0].stringValue, let o = parts[1].stringValue,
                  let op = FieldFilter.Operator(rawValue: o) else {
                throw invalid("a 'where' entry must be [field, op, value]; got \(w)")
            }
            let field = try FieldPath(f)
            var value = parts[2]
            if field.isDocumentID { value = try documentReference(value, collection: collection) }
            out.filters.append(.where(field, op, value))
        }
        for o in q["orderBy"]?.arrayValue ?? [] {
            let parts = o.arrayValue ?? [o]
            guard let f = parts.first?.stringValue else { throw invalid("an 'orderBy' entry must be [field, direction]") }
            let descending = parts.count > 1 && parts[1].stringValue?.lowercased() == "desc"
            out.orderBy.append(OrderBy(try FieldPath(f), descending ? .descending : .ascending))
        }
        return out
    }

    /// A `__name__` operand: a reference, a document id in the queried collection, or a path.
    private static func documentReference(_ v: Value, collection: ResourcePath) throws(DocError) -> Value {
        switch v {
        case .reference: return v
        case .string(let s):
            if s.contains("/") { return .reference(try DocumentKey(s)) }
            return .reference(try DocumentKey(path: try collection.appending(s)))
        case .array(let items):
            var out: [Value] = []
            for x in items { out.append(try documentReference(x, collection: collection)) }
            return .array(out)
        default:
            throw invalid("a __name__ filter needs document references or ids")
        }
    }

    /// Removes `$serverTimestamp`, `$increment` and `$delete` escapes from a value at `path`,
    /// recording them as transforms and deletes; `nil` when the whole value was an escape.
    private static func extract(_ v: Value, at path: [String], transforms: inout [FieldTransform],
                                deletes: inout [FieldPath]) throws(DocError) -> Value? {
        guard case .map(let m) = v else { return v }
        if m.count == 1, let (k, x) = m.first {
            switch k {
            case "$serverTimestamp":
                transforms.append(.serverTimestamp(try FieldPath(segments: path)))
                return nil
            case "$increment":
                guard x.isNumber else { throw invalid("$increment needs a number") }
                transforms.append(.increment(try FieldPath(segments: path), by: x))
                return nil
            case "$delete":
                deletes.append(try FieldPath(segments: path))
                return nil
            default:
                break
            }
        }
        var out: [String: Value] = [:]
        for (k, x) in m {
            if let y = try extract(x, at: path + [k], transforms: &transforms, deletes: &deletes) { out[k] = y }
        }
        return .map(out)
    }

    /// Runs the case: whether the request was allowed (and the write, if any, succeeded).
    func run(_ rules: RuleSet) throws(DocError) -> (allowed: Bool, detail: String) {
        let existing: Document? = path.count % 2 == 0 ? store[try DocumentKey(path: path)] : nil
        var method: RulesMethod
        var written: Document?
        var writeError: DocError?
        switch op {
        case "get": method = .get
        case "list": method = .list
        case "delete": method = .delete
        default:
            method = op == "update" ? .update : (op == "create" ? .create : (existing == nil ? .create : .update))
            let key = try DocumentKey(path: path)
            guard let data else { throw Self.invalid("a \(op) needs 'data'") }
            var transforms: [FieldTransform] = []
            var deletes: [FieldPath] = []
            let mutation: Mutation
            if op == "update" {
                var fields: [FieldPath: Value] = [:]
                for (k, v) in data {
                    let fp: FieldPath
                    if let parsed = try? FieldPath(k) { fp = parsed } else { fp = try FieldPath(segments: [k]) }
                    if let clean = try Self.extract(v, at: fp.segments, transforms: &transforms, deletes: &deletes) {
                        fields[fp] = clean
                    }
                }
                mutation = .update(key, fields: fields, deleting: deletes, transforms: transforms)
            } else {
                var clean: [String: Value] = [:]
                for (k, v) in data {
                    if let y = try Self.extract(v, at: [k], transforms: &transforms, deletes: &deletes) { clean[k] = y }
                }
                mutation = op == "create" ? .create(key, ObjectValue(clean), transforms: transforms)
                                          : .set(key, ObjectValue(clean), transforms: transforms)
            }
            do {
                let (result, _) = try mutation.applyOnServer(existing.map(MaybeDocument.document),
                                                            commitVersion: SnapshotVersion(microseconds: time.microseconds))
                written = result?.document
            } catch {
                writeError = error
            }
        }
        var after: [DocumentKey: Document?] = [:]
        if method == .delete, let k = try? DocumentKey(path: path) { after[k] = .some(nil) }
        if let written { after[written.key] = .some(written) }
        let request = RulesRequest(method: method, path: path, auth: auth, resource: existing,
                                   requestResource: written, time: time, query: query)
        let decision = rules.evaluate(request, lookup: InMemoryDocumentLookup(documents: store, after: after))
        if let writeError {
            return (false, "the write fails: \(writeError) (rules: \(decision.message))")
        }
        return (decision.isAllowed, decision.message)
    }
}
