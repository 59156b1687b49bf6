/// The syntax tree of a rules file. Nodes are immutable classes so a parsed ``RuleSet`` can be
/// shared freely between concurrent evaluations.

/// A type name after `is`.
enum RulesType: String, Sendable, CaseIterable {
    case bool, bytes, duration, float, int, latlng, list, map, number, path, set, string, timestamp
    /// `map_diff`, the result of `Map.diff()`.
    case mapDiff = "map_diff"
    /// The type a name after `is` stands for; also accepts `boolean` and `integer`.
    static func named(_ name: String) -> RulesType? {
        switch name {
        case "boolean": return .bool
        case "integer": return .int
        default: return RulesType(rawValue: name)
        }
    }
}

enum UnaryOp: String, Sendable { case not = "!", negate = "-" }

enum BinaryOp: String, Sendable {
    case multiply = "*", divide = "/", modulo = "%", add = "+", subtract = "-"
    case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    case equal = "==", notEqual = "!=", `in` = "in"
}

/// One part of a path-literal segment: literal text or an interpolated expression.
enum PathSegmentPart: Sendable {
    case text(String)
    case expr(Expr)
}

/// An expression.
final class Expr: Sendable {
    enum Kind: Sendable {
        case null
        case bool(Bool)
        case int(Int64)
        case float(Double)
        case string(String)
        case list([Expr])
        case map([(key: Expr, value: Expr)])
        /// A path literal: segments, each made of text and interpolations.
        case path([[PathSegmentPart]])
        case identifier(String)
        case member(Expr, String)
        case index(Expr, Expr)
        case slice(Expr, Expr?, Expr?)
        /// A call of a user function or a global function (`get`, `exists`, `int`, …).
        case call(String, [Expr])
        /// A method call `receiver.name(args)`, including namespaces (`math.abs(x)`).
        case method(Expr, String, [Expr])
        case unary(UnaryOp, Expr)
        case binary(BinaryOp, Expr, Expr)
        case and(Expr, Expr)
        case or(Expr, Expr)
        case ternary(Expr, Expr, Expr)
        case isType(Expr, RulesType)
    }

    let kind: Kind
    let location: SourceLocation
    /// The height of the tree below this node (1 for a leaf); the parser bounds it so that
    /// evaluation cannot exhaust the stack.
    let height: Int

    init(_ kind: Kind, at location: SourceLocation) {
        self.kind = kind
        self.location = location
        var h = 0
        switch kind {
        case .null, .bool, .int, .float, .string, .identifier: h = 0
        case .list(let items): h = items.map(\.height).max() ?? 0
        case .map(let entries): h = entries.map { max($0.key.height, $0.value.height) }.max() ?? 0
        case .path(let segments):
            for segment in segments {
                for case .expr(let e) in segment { h = max(h, e.height) }
            }
        case .member(let e, _), .unary(_, let e), .isType(let e, _): h = e.height
        case .index(let a, let b), .binary(_, let a, let b), .and(let a, let b), .or(let a, let b):
            h = max(a.height, b.height)
        case .slice(let a, let b, let c): h = max(a.height, b?.height ?? 0, c?.height ?? 0)
        case .call(_, let args): h = args.map(\.height).max() ?? 0
        case .method(let r, _, let args): h = max(r.height, args.map(\.height).max() ?? 0)
        case .ternary(let a, let b, let c): h = max(a.height, b.height, c.height)
        }
        self.height = h + 1
    }
}

/// A request method an `allow` names, after expanding `read` and `write`.
public enum RulesMethod: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case get, list, create, update, delete

    public var description: String { rawValue }

    /// The methods `read` (get, list) and `write` (create, update, delete) stand for.
    static func expand(_ name: String) -> [RulesMethod]? {
        switch name {
        case "read": return [.get, .list]
        case "write": return [.create, .update, .delete]
        default: return RulesMethod(rawValue: name).map { [$0] }
        }
    }
}

/// `allow get, list: if condition;`
struct AllowRule: Sendable {
    var methods: Set<RulesMethod>
    /// The methods as written (`read, update`), for messages.
    var methodsText: String
    /// `nil` for an unconditional `allow read;`.
    var condition: Expr?
    var location: SourceLocation
}

/// `function name(params) { let x = …; return …; }`
final class FunctionDecl: Sendable {
    let name: String
    let params: [String]
    let lets: [(name: String, value: Expr)]
    let body: Expr
    let location: SourceLocation

    init(name: String, params: [String], lets: [(name: String, value: Expr)], body: Expr, location: SourceLocation) {
        self.name = name
        self.params = params
        self.lets = lets
        self.body = body
        self.location = location
    }
}

/// One segment of a `match` path.
enum PatternSegment: Sendable, Equatable {
    case literal(String)
    /// `{name}`: exactly one segment.
    case single(String)
    /// `{name=**}`: several segments (see ``RulesVersion``).
    case recursive(String)
}

/// The version a rules file declares with `rules_version`.
public enum RulesVersion: Int, Sendable {
    /// No `rules_version`, or `'1'`: `{x=**}` matches one or more segments, only at the end.
    case v1 = 1
    /// `rules_version = '2'`: `{x=**}` matches zero or more segments anywhere in a path.
    case v2 = 2
}

/// A `match` block (the service body is the root block, with an empty pattern).
final class MatchBlock: Sendable {
    let pattern: [PatternSegment]
    /// The path as written, for messages.
    let patternText: String
    let location: SourceLocation
    let rules: [AllowRule]
    let functions: [String: FunctionDecl]
    let children: [MatchBlock]

    init(pattern: [PatternSegment], patternText: String, location: SourceLocation,
         rules: [AllowRule], functions: [String: FunctionDecl], children: [MatchBlock]) {
        self.pattern = pattern
        self.patternText = patternText
        self.location = location
        self.rules = rules
        self.functions = functions
        self.children = children
    }
}
