internal import DocModel

/// An evaluation error. It makes the rule it happens in deny (unless `&&`/`||` absorb it).
struct EvalError: Error, Sendable {
    var message: String
    var location: SourceLocation?

    init(_ message: String, at location: SourceLocation? = nil) {
        self.message = message
        self.location = location
    }

    func located(_ loc: SourceLocation) -> EvalError {
        location == nil ? EvalError(message, at: loc) : self
    }

    var description: String {
        if let location { return "\(location): \(message)" }
        return message
    }
}

/// The blocks a request path matched, outermost first, with the wildcard values bound so far
/// at each level (cumulative).
final class MatchScope: Sendable {
    struct Level: Sendable {
        let block: MatchBlock
        let bindings: [String: RulesValue]
    }
    let levels: [Level]

    init(levels: [Level]) { self.levels = levels }
}

/// The variables of one user-function call: its parameters and `let`s (evaluated on first use).
final class Frame {
    let function: FunctionDecl
    var values: [String: RulesValue]
    private var letValues: [RulesValue?]

    init(function: FunctionDecl, arguments: [RulesValue]) {
        self.function = function
        self.values = Dictionary(uniqueKeysWithValues: zip(function.params, arguments))
        self.letValues = Array(repeating: nil, count: function.lets.count)
    }

    func letValue(_ index: Int) -> RulesValue? { letValues[index] }
    func setLet(_ index: Int, _ value: RulesValue) { letValues[index] = value }
}

/// Where an expression is evaluated: the matched blocks, the level whose wildcards and
/// functions are visible, the current function frame and how many `let`s of it are visible.
struct Env {
    let scope: MatchScope
    let level: Int
    let frame: Frame?
    let letLimit: Int
    let callDepth: Int
}

/// Evaluates expressions for one request (or one batch of requests).
///
/// Semantics, as in Firestore:
/// - `&&` and `||` short-circuit, and absorb errors: `error || true` is `true`,
///   `error && false` is `false`; otherwise the error propagates and the rule denies.
/// - Integer overflow, division by zero, a missing map key or list index, a type mismatch
///   and a call of an unknown function are errors.
/// - User functions are called with their arguments evaluated first; their `let`s are
///   evaluated when first used (at most once per call). Calls nest at most
///   ``maxCallDepth`` deep.
///
/// While a `list` request is decided, some values are unknown (see `ListQueryAnalysis.swift`);
/// the evaluator then computes with three values (true, false, unknown).
final class Evaluator {
    /// Firestore's limit on nested function calls.
    static let maxCallDepth = 20
    /// A bound on the evaluator's own recursion (a second guard against stack exhaustion).
    static let maxNesting = 1_000

    let database: String
    let time: Timestamp
    let budget: LookupBudget
    let lookup: any DocumentLookup
    /// The Firestore request; `nil` while deciding a storage request (whose rules cannot read
    /// documents, see `RuleSet+Storage.swift`).
    let request: RulesRequest?
    /// `request` as the rules see it.
    let requestValue: RulesValue
    /// `resource` as the rules see it (set per combination for a list request).
    var resourceValue: RulesValue
    /// Whether unknown values may occur (a list request).
    let symbolic: Bool
    private var nesting = 0
    private var regexCache: [String: RulesRegex] = [:]

    /// An evaluator of prepared `request` and `resource` values. `request` is the Firestore
    /// request documents are read for, `nil` for storage rules.
    init(request: RulesRequest?, requestValue: RulesValue, resourceValue: RulesValue, database: String,
         time: Timestamp, lookup: any DocumentLookup, budget: LookupBudget, symbolic: Bool) {
        self.request = request
        self.database = database
        self.time = time
        self.lookup = lookup
        self.budget = budget
        self.symbolic = symbolic
        self.requestValue = requestValue
        self.resourceValue = resourceValue
    }

    /// An evaluator for a Firestore request.
    convenience init(request: RulesRequest, lookup: any DocumentLookup, budget: LookupBudget, symbolic: Bool) {
        self.init(request: request, requestValue: Self.makeRequestValue(request),
                  resourceValue: request.resource.map { Self.resourceValue($0, database: request.database, time: request.time) } ?? .null,
                  database: request.database, time: request.time, lookup: lookup, budget: budget, symbolic: symbolic)
    }

    // MARK: - Request values

    /// `{__name__, id, data}` for a document.
    static func resourceValue(_ doc: Document, database: String, time: Timestamp) -> RulesValue {
        .map([
            "__name__": .path(RulesPath(segments: ["databases", database, "documents"] + doc.key.path.segments)),
            "id": .string(doc.key.documentID),
            "data": .map(doc.data.fields.mapValues { RulesValue($0, database: database, requestTime: time) }),
        ])
    }

    private static func makeRequestValue(_ r: RulesRequest) -> RulesValue {
        var m: [String: RulesValue] = [
            "method": .string(r.method.rawValue),
            "time": .timestamp(r.time),
            "path": .path(RulesPath(segments: ["databases", r.database, "documents"] + r.path.segments)),
            "resource": r.requestResource.map { resourceValue($0, database: r.database, time: r.time) } ?? .null,
        ]
        m["auth"] = authValue(r.auth, database: r.database, time: r.time)
        if r.method == .list {
            let q = r.query ?? RulesQuery()
            var orderBy: [String: RulesValue] = [:]
            for o in q.orderBy { orderBy[o.field.canonicalString] = .string(o.isDescending ? "DESC" : "ASC") }
            m["query"] = .map([
                "limit": q.limit.map { .int($0) } ?? .null,
                "offset": q.offset.map { .int($0) } ?? .null,
                "orderBy": .map(orderBy),
            ])
        }
        return .map(m)
    }

    /// `request.auth`: `{uid, token}`, or `null` for an unauthenticated caller.
    static func authValue(_ auth: RulesAuth?, database: String, time: Timestamp) -> RulesValue {
        guard let auth else { return .null }
        var token = auth.token.mapValues { RulesValue($0, database: database, requestTime: time) }
        if token["sub"] == nil { token["sub"] = .string(auth.uid) }
        return .map(["uid": .string(auth.uid), "token": .map(token)])
    }

    // MARK: - Entry

    /// Evaluates a rule condition to a three-valued result.
    func condition(_ e: Expr, scope: MatchScope, level: Int) -> ConditionResult {
        let env = Env(scope: scope, level: level, frame: nil, letLimit: 0, callDepth: 0)
        do {
            let v = try eval(e, env)
            switch v {
            case .bool(let b): return b ? .allowed : .denied
            case .unknown, .partialMap: return .undecided
            default: return .error(EvalError("the condition is \(v.typeName), not bool", at: e.location))
            }
        } catch {
            return .error(error)
        }
    }

    enum ConditionResult {
        case allowed, denied, undecided
        case error(EvalError)
    }

    // MARK: - Expressions

    func eval(_ e: Expr, _ env: Env) throws(EvalError) -> RulesValue {
        nesting += 1
        defer { nesting -= 1 }
        if nesting > Self.maxNesting { throw EvalError("evaluation nested too deeply", at: e.location) }
        do {
            switch e.kind {
            case .null: return .null
            case .bool(let b): return .bool(b)
            case .int(let i): return .int(i)
            case .float(let d): return .float(d)
            case .string(let s): return .string(s)
            case .list(let items): return try evalList(items, env)
            case .map(let entries): return try evalMap(entries, env)
            case .path(let segments): return try evalPath(segments, env)
            case .identifier(let name): return try variable(name, env)
            case .member(let r, let name): return try member(try eval(r, env), name)
            case .index(let r, let i): return try index(try eval(r, env), try eval(i, env))
            case .slice(let r, let a, let b): return try evalSlice(r, a, b, env)
            case .call(let name, let args): return try call(name, args, env, at: e.location)
            case .method(let r, let name, let args): return try evalMethod(r, name, args, env)
            case .unary(let op, let x): return try Operators.unary(op, try eval(x, env))
            case .binary(let op, let a, let b): return try Operators.binary(op, try eval(a, env), try eval(b, env))
            case .and(let a, let b): return try logical(a, b, env, isAnd: true)
            case .or(let a, let b): return try logical(a, b, env, isAnd: false)
            case .ternary(let c, let y, let n): return try ternary(c, y, n, env)
            case .isType(let x, let t): return Operators.isType(try eval(x, env), t)
            }
        } catch {
            throw error.located(e.location)
        }
    }

    private func evalList(_ items: [Expr], _ env: Env) throws(EvalError) -> RulesValue {
        var out: [RulesValue] = []
        out.reserveCapacity(items.count)
        for i in items { out.append(try eval(i, env)) }
        return .list(out)
    }

    private func evalMap(_ entries: [(key: Expr, value: Expr)], _ env: Env) throws(EvalError) -> RulesValue {
        var out: [String: RulesValue] = [:]
        for (k, v) in entries {
            let key = try eval(k, env)
            guard case .string(let s) = key else {
                if key.isUnknown { return .anyUnknown }
                throw EvalError("map keys must be strings, not \(key.typeName)", at: k.location)
            }
            out[s] = try eval(v, env)
        }
        return .map(out)
    }

    private func evalPath(_ segments: [[PathSegmentPart]], _ env: Env) throws(EvalError) -> RulesValue {
        var out: [String] = []
        var unknown = false
        for segment in segments {
            // A segment that is exactly one interpolation of a path splices that path in.
            if segment.count == 1, case .expr(let x) = segment[0] {
                let v = try eval(x, env)
                if case .path(let p) = v {
                    out.append(contentsOf: p.segments)
                    continue
                }
                guard let s = try interpolationText(v, at: x.location) else { unknown = true; continue }
                out.append(s)
                continue
            }
            var text = ""
            for part in segment {
                switch part {
                case .text(let s): text += s
                case .expr(let x):
                    let v = try eval(x, env)
                    guard let s = try interpolationText(v, at: x.location) else { unknown = true; continue }
                    text += s
                }
            }
            out.append(text)
        }
        return unknown ? .anyUnknown : .path(RulesPath(segments: out))
    }

    /// The text an interpolated value contributes to a path; `nil` when unknown.
    private func interpolationText(_ v: RulesValue, at loc: SourceLocation) throws(EvalError) -> String? {
        switch v {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .path(let p): return p.segments.joined(separator: "/")
        case .unknown, .partialMap: return nil
        default: throw EvalError("cannot put a \(v.typeName) into a path", at: loc)
        }
    }

    private func evalSlice(_ r: Expr, _ a: Expr?, _ b: Expr?, _ env: Env) throws(EvalError) -> RulesValue {
        let base = try eval(r, env)
        let lower = try a.map { e throws(EvalError) in try eval(e, env) }
        let upper = try b.map { e throws(EvalError) in try eval(e, env) }
        return try Operators.slice(base, lower, upper)
    }

    private func evalMethod(_ r: Expr, _ name: String, _ args: [Expr], _ env: Env) throws(EvalError) -> RulesValue {
        let receiver = try eval(r, env)
        var values: [RulesValue] = []
        values.reserveCapacity(args.count)
        for a in args { values.append(try eval(a, env)) }
        return try Methods.call(receiver, name, values, self)
    }

    // MARK: - Logic

    private func logical(_ a: Expr, _ b: Expr, _ env: Env, isAnd: Bool) throws(EvalError) -> RulesValue {
        let decisive = !isAnd   // `true` decides `||`, `false` decides `&&`
        let op = isAnd ? "&&" : "||"
        var leftError: EvalError?
        var leftUnknown = false
        do {
            let l = try eval(a, env)
            switch l {
            case .bool(let v): if v == decisive { return .bool(decisive) }
            case .unknown, .partialMap: leftUnknown = true
            default: leftError = EvalError("'\(op)' needs bool operands, not \(l.typeName)", at: a.location)
            }
        } catch {
            leftError = error
        }
        let r: RulesValue
        do {
            r = try eval(b, env)
        } catch {
            throw leftError ?? error
        }
        switch r {
        case .bool(let v):
            if v == decisive { return .bool(decisive) }
            if let leftError { throw leftError }
            return leftUnknown ? .anyUnknown : .bool(!decisive)
        case .unknown, .partialMap:
            if let leftError { throw leftError }
            return .anyUnknown
        default:
            throw leftError ?? EvalError("'\(op)' needs bool operands, not \(r.typeName)", at: b.location)
        }
    }

    private func ternary(_ c: Expr, _ y: Expr, _ n: Expr, _ env: Env) throws(EvalError) -> RulesValue {
        let cond = try eval(c, env)
        switch cond {
        case .bool(let b): return try eval(b ? y : n, env)
        case .unknown, .partialMap:
            // Both branches are possible: the result is known only when they agree.
            guard let yes = try? eval(y, env), let no = try? eval(n, env) else { return .anyUnknown }
            return Operators.triEqual(yes, no) == true ? yes : .anyUnknown
        default:
            throw EvalError("the condition of '?:' must be bool, not \(cond.typeName)", at: c.location)
        }
    }

    // MARK: - Variables

    private func variable(_ name: String, _ env: Env) throws(EvalError) -> RulesValue {
        if let frame = env.frame {
            if let v = frame.values[name] { return v }
            if let i = frame.function.lets.prefix(env.letLimit).lastIndex(where: { $0.name == name }) {
                if let v = frame.letValue(i) { return v }
                let letEnv = Env(scope: env.scope, level: env.level, frame: frame, letLimit: i, callDepth: env.callDepth)
                let v = try eval(frame.function.lets[i].value, letEnv)
                frame.setLet(i, v)
                return v
            }
        }
        if let v = env.scope.levels[env.level].bindings[name] { return v }
        switch name {
        case "request": return requestValue
        case "resource": return resourceValue
        case "firestore" where request == nil:
            throw EvalError("reading Firestore documents from storage rules (firestore.get(), firestore.exists()) is not supported")
        default:
            if let ns = RulesValue.Namespace(rawValue: name) { return .namespace(ns) }
            throw EvalError("unknown variable '\(name)'")
        }
    }

    // MARK: - Field access

    func member(_ base: RulesValue, _ name: String) throws(EvalError) -> RulesValue {
        switch base {
        case .map(let m):
            guard let v = m[name] else { throw EvalError("no field '\(name)' in the map") }
            return v
        case .partialMap(let p):
            return p.known[name] ?? .anyUnknown
        case .unknown:
            return .anyUnknown
        case .null:
            throw EvalError("cannot read field '\(name)' of null")
        default:
            throw EvalError("cannot read field '\(name)' of a \(base.typeName)")
        }
    }

    func index(_ base: RulesValue, _ key: RulesValue) throws(EvalError) -> RulesValue {
        if key.isUnknown {
            switch base {
            case .map, .partialMap, .list, .path, .unknown: return .anyUnknown
            default: break
            }
        }
        switch (base, key) {
        case let (.map(m), .string(k)):
            guard let v = m[k] else { throw EvalError("no key '\(k)' in the map") }
            return v
        case let (.partialMap(p), .string(k)):
            return p.known[k] ?? .anyUnknown
        case let (.list(l), .int(i)):
            guard i >= 0, i < l.count else { throw EvalError("list index \(i) out of range (size \(l.count))") }
            return l[Int(i)]
        case let (.path(p), .int(i)):
            guard i >= 0, i < p.segments.count else { throw EvalError("path index \(i) out of range (\(p.segments.count) segments)") }
            return .string(p.segments[Int(i)])
        case (.unknown, _):
            return .anyUnknown
        case (.null, _):
            throw EvalError("cannot index null")
        default:
            throw EvalError("cannot index a \(base.typeName) with a \(key.typeName)")
        }
    }

    // MARK: - Calls

    private func call(_ name: String, _ args: [Expr], _ env: Env, at loc: SourceLocation) throws(EvalError) -> RulesValue {
        // User functions, innermost block first.
        var level = env.level
        while level >= 0 {
            if let f = env.scope.levels[level].block.functions[name] {
                return try callUser(f, level: level, args, env)
            }
            level -= 1
        }
        var values: [RulesValue] = []
        for a in args { values.append(try eval(a, env)) }
        return try Builtins.call(name, values, self)
    }

    private func callUser(_ f: FunctionDecl, level: Int, _ args: [Expr], _ env: Env) throws(EvalError) -> RulesValue {
        guard args.count == f.params.count else {
            throw EvalError("function '\(f.name)' takes \(f.params.count) arguments, called with \(args.count)")
        }
        guard env.callDepth < Self.maxCallDepth else {
            throw EvalError("function calls nested deeper than \(Self.maxCallDepth) (at '\(f.name)')")
        }
        var values: [RulesValue] = []
        values.reserveCapacity(args.count)
        for a in args { values.append(try eval(a, env)) }
        let frame = Frame(function: f, arguments: values)
        let inner = Env(scope: env.scope, level: level, frame: frame, letLimit: f.lets.count, callDepth: env.callDepth + 1)
        do {
            return try eval(f.body, inner)
        } catch {
            throw EvalError("in function '\(f.name)': \(error.description)")
        }
    }

    // MARK: - Regular expressions

    func regex(_ pattern: String) throws(EvalError) -> RulesRegex {
        if let r = regexCache[pattern] { return r }
        do {
            let r = try RulesRegex(pattern)
            regexCache[pattern] = r
            return r
        } catch {
            throw EvalError("invalid regular expression '\(pattern)': \(error.message)")
        }
    }
}

extension Evaluator {
    /// Parses and evaluates one expression against `request` (for tests and tools): the
    /// wildcard `bindings` are visible, `functions` (a rules snippet of `function` declarations)
    /// can be called.
    static func evaluate(
        expression source: String, request: RulesRequest, lookup: any DocumentLookup = InMemoryDocumentLookup(),
        bindings: [String: RulesValue] = [:], symbolic: Bool = false
    ) throws -> RulesValue {
        let expr = try Parser.parseExpression(source: source)
        let root = MatchBlock(pattern: [], patternText: "", location: expr.location, rules: [], functions: [:], children: [])
        let scope = MatchScope(levels: [MatchScope.Level(block: root, bindings: bindings)])
        let ev = Evaluator(request: request, lookup: lookup, budget: LookupBudget(limit: LookupBudget.singleRequestLimit), symbolic: symbolic)
        return try ev.eval(expr, Env(scope: scope, level: 0, frame: nil, letLimit: 0, callDepth: 0))
    }
}
