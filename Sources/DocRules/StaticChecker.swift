/// Checks a parsed rules tree before it is used: calls of user functions resolve and have the
/// right number of arguments, and no function calls itself, directly or through others
/// (Firestore rejects recursion when rules are deployed).
///
/// Calls of names that are neither user functions in scope nor built-in functions are not
/// fatal: they become warnings and fail at evaluation (denying that rule). So do, in a
/// `service firebase.storage` block, reads of Firestore documents (`get()`, `exists()`,
/// `getAfter()`, `existsAfter()`, `firestore.get()`, `firestore.exists()`), which doccache's
/// storage rules do not support.
///
/// A file may hold a Firestore and a storage block; top-level functions belong to both and are
/// checked in both (the same warning is reported once).
struct StaticChecker {
    let file: String
    private(set) var warnings: [RulesError] = []
    private var edges: [ObjectIdentifier: [FunctionDecl]] = [:]
    private var functions: [FunctionDecl] = []
    /// The service whose block is being walked.
    private var service = RulesService.firestore
    /// Functions shared with the Firestore block (top-level ones): storage-only warnings are
    /// not given for them, as they may be meant for Firestore rules.
    private var shared: Set<ObjectIdentifier> = []

    init(file: String) { self.file = file }

    private static let builtinArity: [String: Int] = [
        "get": 1, "exists": 1, "getAfter": 1, "existsAfter": 1,
        "int": 1, "float": 1, "string": 1, "bool": 1, "path": 1, "debug": 1,
    ]

    /// Checks the service blocks of a file (at least one is present).
    mutating func check(firestore: MatchBlock?, storage: MatchBlock?) throws(RulesError) {
        if let firestore {
            service = .firestore
            try walk(firestore, chain: [firestore])
        }
        if let storage {
            service = .storage
            if let firestore {
                shared = Set(firestore.functions.values.filter { f in storage.functions[f.name] === f }.map(ObjectIdentifier.init))
            }
            try walk(storage, chain: [storage])
        }
        try findCycles()
    }

    /// Builtins that read Firestore documents, which storage rules cannot call.
    private static let documentReads: Set<String> = ["get", "exists", "getAfter", "existsAfter"]

    /// A warning, unless the same one was given already (top-level functions are walked once per
    /// service block).
    private mutating func warn(_ message: String, at loc: SourceLocation) {
        let w = error(message, at: loc)
        if !warnings.contains(w) { warnings.append(w) }
    }

    /// Whether `caller` (a function, or a rule when `nil`) is storage-only code.
    private func inStorageOnly(_ caller: FunctionDecl?) -> Bool {
        guard service == .storage else { return false }
        guard let caller else { return true }
        return !shared.contains(ObjectIdentifier(caller))
    }

    /// The user function `name` as seen from the innermost block of `chain`.
    static func resolve(_ name: String, in chain: [MatchBlock]) -> FunctionDecl? {
        for block in chain.reversed() {
            if let f = block.functions[name] { return f }
        }
        return nil
    }

    private func error(_ message: String, at loc: SourceLocation) -> RulesError {
        RulesError(.invalidRule, message, file: file, line: loc.line, column: loc.column)
    }

    private mutating func walk(_ block: MatchBlock, chain: [MatchBlock]) throws(RulesError) {
        for f in block.functions.values.sorted(by: { $0.location.offset < $1.location.offset }) {
            functions.append(f)
            for binding in f.lets { try visit(binding.value, chain: chain, caller: f) }
            try visit(f.body, chain: chain, caller: f)
        }
        for rule in block.rules {
            if let c = rule.condition { try visit(c, chain: chain, caller: nil) }
        }
        for child in block.children {
            try walk(child, chain: chain + [child])
        }
    }

    private mutating func visit(_ e: Expr, chain: [MatchBlock], caller: FunctionDecl?) throws(RulesError) {
        switch e.kind {
        case .null, .bool, .int, .float, .string, .identifier:
            return
        case .list(let items):
            for i in items { try visit(i, chain: chain, caller: caller) }
        case .map(let entries):
            for (k, v) in entries {
                try visit(k, chain: chain, caller: caller)
                try visit(v, chain: chain, caller: caller)
            }
        case .path(let segments):
            for segment in segments {
                for case .expr(let x) in segment { try visit(x, chain: chain, caller: caller) }
            }
        case .member(let x, _), .unary(_, let x), .isType(let x, _):
            try visit(x, chain: chain, caller: caller)
        case .index(let a, let b), .binary(_, let a, let b), .and(let a, let b), .or(let a, let b):
            try visit(a, chain: chain, caller: caller)
            try visit(b, chain: chain, caller: caller)
        case .slice(let a, let b, let c):
            try visit(a, chain: chain, caller: caller)
            if let b { try visit(b, chain: chain, caller: caller) }
            if let c { try visit(c, chain: chain, caller: caller) }
        case .ternary(let a, let b, let c):
            try visit(a, chain: chain, caller: caller)
            try visit(b, chain: chain, caller: caller)
            try visit(c, chain: chain, caller: caller)
        case .method(let r, let name, let args):
            if case .identifier("firestore") = r.kind, inStorageOnly(caller) {
                warn("'firestore.\(name)()' (reading Firestore documents from storage rules) is not supported; calling it is an evaluation error",
                     at: e.location)
            }
            try visit(r, chain: chain, caller: caller)
            for a in args { try visit(a, chain: chain, caller: caller) }
        case .call(let name, let args):
            for a in args { try visit(a, chain: chain, caller: caller) }
            if let f = Self.resolve(name, in: chain) {
                guard f.params.count == args.count else {
                    throw error("function '\(name)' takes \(f.params.count) argument\(f.params.count == 1 ? "" : "s"), called with \(args.count)", at: e.location)
                }
                if let caller { edges[ObjectIdentifier(caller), default: []].append(f) }
            } else if let arity = Self.builtinArity[name] {
                guard arity == args.count else {
                    throw error("'\(name)' takes \(arity) argument\(arity == 1 ? "" : "s"), called with \(args.count)", at: e.location)
                }
                if Self.documentReads.contains(name), inStorageOnly(caller) {
                    warn("'\(name)()' reads Firestore documents, which storage rules cannot do; calling it is an evaluation error",
                         at: e.location)
                }
            } else {
                warn("unknown function '\(name)'; calling it is an evaluation error", at: e.location)
            }
        }
    }

    private func findCycles() throws(RulesError) {
        var state: [ObjectIdentifier: Int] = [:]   // 1 = on the stack, 2 = done
        var stack: [FunctionDecl] = []
        func dfs(_ f: FunctionDecl) throws(RulesError) {
            let id = ObjectIdentifier(f)
            state[id] = 1
            stack.append(f)
            for g in edges[id] ?? [] {
                let gid = ObjectIdentifier(g)
                if state[gid] == 1 {
                    let start = stack.firstIndex { $0 === g }!
                    let cycle = (stack[start...].map(\.name) + [g.name]).joined(separator: " → ")
                    throw error("recursive function call: \(cycle) (recursion is not allowed)", at: g.location)
                }
                if state[gid] == nil { try dfs(g) }
            }
            stack.removeLast()
            state[id] = 2
        }
        for f in functions where state[ObjectIdentifier(f)] == nil {
            try dfs(f)
        }
    }
}
