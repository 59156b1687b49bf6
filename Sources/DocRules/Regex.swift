/// A small regular-expression engine for `string.matches()`, `split()` and `replace()`.
///
/// It accepts a subset of RE2 syntax and, like RE2, runs in time linear in the input (a Pike
/// VM: no backtracking, so a hostile pattern cannot make evaluation explode):
///
/// - literals, `.`, escapes of punctuation (`\.` `\*` …), `\n \t \r \f \v \a`, `\xHH`, `\x{H…}`
/// - classes `[abc]`, `[^a-z]`, with `\d \w \s` inside and POSIX `[[:alpha:]]` etc.
/// - `\d \D \w \W \s \S` (ASCII, as in RE2), `\pL`, `\p{Lu}`, `\PL` (Unicode general categories)
/// - groups `( )`, `(?: )`, `(?P<name> )`, `(?<name> )`, flags `(?i)`, `(?s)`, `(?m)` and `(?i: )`
/// - alternation `|`, repetition `* + ? {n} {n,} {n,m}` (greedy or lazy with `?`; at most 1000)
/// - anchors `^ $ \A \z` and word boundaries `\b \B`
///
/// Not supported (RE2 does not support them either): backreferences and lookaround.
/// Strings are matched as sequences of Unicode scalars.
struct RulesRegex: Sendable {
    struct SyntaxError: Error {
        var message: String
    }

    /// The largest compiled program.
    static let maxInstructions = 20_000
    /// The largest repetition count, as in RE2.
    static let maxRepeat = 1_000

    fileprivate let program: [Inst]

    init(_ pattern: String) throws(SyntaxError) {
        var parser = RegexParser(Array(pattern.unicodeScalars))
        let node = try parser.parseAll()
        var compiler = RegexCompiler()
        try compiler.emit(node)
        compiler.code.append(.match)
        program = compiler.code
    }

    /// Whether the whole string matches (what `matches()` asks).
    func matchesWhole(_ s: String) -> Bool {
        let input = Array(s.unicodeScalars)
        return run(input, from: 0, anchored: true, wholeInput: true) != nil
    }

    /// The leftmost-first match starting at or after `from`: its scalar range.
    func firstMatch(in input: [Unicode.Scalar], from: Int) -> Range<Int>? {
        run(input, from: from, anchored: false, wholeInput: false)
    }

    // MARK: - Pike VM

    private struct Thread {
        var pc: Int
        var start: Int
    }

    private func run(_ input: [Unicode.Scalar], from: Int, anchored: Bool, wholeInput: Bool) -> Range<Int>? {
        let n = input.count
        var current: [Thread] = []
        var next: [Thread] = []
        var mark = [Int](repeating: -1, count: program.count)
        var generation = 0
        var matched: Range<Int>?
        var stack: [Int] = []

        func addThread(_ list: inout [Thread], _ pc0: Int, start: Int, at pos: Int) {
            stack.removeAll(keepingCapacity: true)
            stack.append(pc0)
            while let pc = stack.popLast() {
                if mark[pc] == generation { continue }
                mark[pc] = generation
                switch program[pc] {
                case .jump(let t):
                    stack.append(t)
                case .split(let first, let second):
                    stack.append(second)
                    stack.append(first)
                case .assert(let a):
                    if a.holds(input, pos) { stack.append(pc + 1) }
                default:
                    list.append(Thread(pc: pc, start: start))
                }
            }
        }

        var pos = from
        generation += 1
        addThread(&current, 0, start: from, at: pos)
        while true {
            generation += 1
            next.removeAll(keepingCapacity: true)
            let c: Unicode.Scalar? = pos < n ? input[pos] : nil
            threadLoop: for t in current {
                switch program[t.pc] {
                case .match:
                    if wholeInput && pos != n { continue }
                    matched = t.start..<pos
                    break threadLoop   // lower-priority threads are cut
                case .char(let x, let fold):
                    if let c, c == x || (fold && RegexFolding.fold(c) == RegexFolding.fold(x)) {
                        addThread(&next, t.pc + 1, start: t.start, at: pos + 1)
                    }
                case .any(let dotAll):
                    if let c, dotAll || c != "\n" { addThread(&next, t.pc + 1, start: t.start, at: pos + 1) }
                case .set(let set):
                    if let c, set.contains(c) { addThread(&next, t.pc + 1, start: t.start, at: pos + 1) }
                default:
                    break
                }
            }
            if pos >= n { break }
            pos += 1
            if matched == nil && !anchored {
                // A new attempt starting here, with the lowest priority.
                addThread(&next, 0, start: pos, at: pos)
            }
            if next.isEmpty { break }
            swap(&current, &next)
        }
        return matched
    }
}

// MARK: - Program

private enum Inst: Sendable {
    case char(Unicode.Scalar, fold: Bool)
    case any(dotAll: Bool)
    case set(ScalarSet)
    case split(Int, Int)
    case jump(Int)
    case assert(Assertion)
    case match
}

private enum Assertion: Sendable {
    case textStart, textEnd, lineStart, lineEnd, wordBoundary, notWordBoundary

    func holds(_ input: [Unicode.Scalar], _ pos: Int) -> Bool {
        switch self {
        case .textStart: return pos == 0
        case .textEnd: return pos == input.count
        case .lineStart: return pos == 0 || input[pos - 1] == "\n"
        case .lineEnd: return pos == input.count || input[pos] == "\n"
        case .wordBoundary, .notWordBoundary:
            let before = pos > 0 && ScalarSet.isWord(input[pos - 1])
            let after = pos < input.count && ScalarSet.isWord(input[pos])
            return (before != after) == (self == .wordBoundary)
        }
    }
}

/// A set of scalars: ranges, Unicode general categories, negation, case folding.
private struct ScalarSet: Sendable {
    var ranges: [ClosedRange<UInt32>] = []
    var categories: [(Unicode.GeneralCategory, Bool)] = []   // (category, negated)
    var negated = false
    var fold = false

    func contains(_ c: Unicode.Scalar) -> Bool {
        var hit = rawContains(c)
        if !hit, fold {
            let f = RegexFolding.fold(c)
            hit = rawContains(f) || RegexFolding.upper(c).map(rawContains) == true
        }
        return hit != negated
    }

    private func rawContains(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        for r in ranges where r.contains(v) { return true }
        for (cat, neg) in categories where (c.properties.generalCategory == cat) != neg { return true }
        return false
    }

    static func isWord(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        return (v >= 48 && v <= 57) || (v >= 65 && v <= 90) || (v >= 97 && v <= 122) || v == 95
    }

    static let digit: [ClosedRange<UInt32>] = [48...57]
    static let word: [ClosedRange<UInt32>] = [48...57, 65...90, 95...95, 97...122]
    static let space: [ClosedRange<UInt32>] = [9...10, 12...13, 32...32]

    /// The complement of sorted, non-overlapping ranges over all scalars.
    static func complement(_ rs: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
        var out: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for r in rs.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if r.lowerBound > next { out.append(next...(r.lowerBound - 1)) }
            next = max(next, r.upperBound &+ 1)
        }
        if next <= 0x10FFFF { out.append(next...0x10FFFF) }
        return out
    }
}

enum RegexFolding {
    /// Simple lower-case folding of one scalar.
    static func fold(_ c: Unicode.Scalar) -> Unicode.Scalar {
        if c.isASCII {
            return (c.value >= 65 && c.value <= 90) ? Unicode.Scalar(c.value + 32)! : c
        }
        let m = c.properties.lowercaseMapping.unicodeScalars
        return m.count == 1 ? m.first! : c
    }

    static func upper(_ c: Unicode.Scalar) -> Unicode.Scalar? {
        let m = c.properties.uppercaseMapping.unicodeScalars
        return m.count == 1 ? m.first! : nil
    }
}

// MARK: - Syntax tree

private indirect enum Node {
    case empty
    case char(Unicode.Scalar, fold: Bool)
    case any(dotAll: Bool)
    case set(ScalarSet)
    case concat([Node])
    case alt([Node])
    case repeatNode(Node, min: Int, max: Int?, greedy: Bool)
    case assert(Assertion)
}

private struct Flags {
    var caseInsensitive = false
    var dotAll = false
    var multiLine = false
}

private struct RegexParser {
    let s: [Unicode.Scalar]
    var i = 0
    var depth = 0

    init(_ s: [Unicode.Scalar]) { self.s = s }

    typealias SyntaxError = RulesRegex.SyntaxError

    mutating func parseAll() throws(SyntaxError) -> Node {
        var flags = Flags()
        let node = try parseAlternation(&flags)
        if i < s.count { throw SyntaxError(message: "unmatched ')' at \(i)") }
        return node
    }

    private func peek() -> Unicode.Scalar? { i < s.count ? s[i] : nil }

    private mutating func parseAlternation(_ flags: inout Flags) throws(SyntaxError) -> Node {
        var branches = [try parseConcat(&flags)]
        while peek() == "|" {
            i += 1
            branches.append(try parseConcat(&flags))
        }
        return branches.count == 1 ? branches[0] : .alt(branches)
    }

    private mutating func parseConcat(_ flags: inout Flags) throws(SyntaxError) -> Node {
        var items: [Node] = []
        while let c = peek(), c != "|", c != ")" {
            var atom: Node
            if c == "(" {
                i += 1
                depth += 1
                defer { depth -= 1 }
                if depth > 200 { throw SyntaxError(message: "groups nested too deeply") }
                var inner = flags
                if peek() == "?" {
                    i += 1
                    if peek() == "P" || peek() == "<" {
                        if peek() == "P" { i += 1 }
                        guard peek() == "<" else { throw SyntaxError(message: "malformed named group") }
                        while let d = peek(), d != ">" { i += 1 }
                        guard peek() == ">" else { throw SyntaxError(message: "malformed named group") }
                        i += 1
                    } else {
                        // Flags: (?i) for the rest of this group, or (?i:…) for a group.
                        var on = true
                        var any = false
                        while let d = peek(), d != ")", d != ":" {
                            switch d {
                            case "i": inner.caseInsensitive = on
                            case "s": inner.dotAll = on
                            case "m": inner.multiLine = on
                            case "-": on = false
                            default: throw SyntaxError(message: "unsupported group or flag '(?\(d)'")
                            }
                            any = true
                            i += 1
                        }
                        guard let d = peek() else { throw SyntaxError(message: "missing ')'") }
                        i += 1
                        if d == ")" {
                            guard any else { throw SyntaxError(message: "empty flag group") }
                            flags = inner
                            continue
                        }
                    }
                }
                atom = try parseAlternation(&inner)
                guard peek() == ")" else { throw SyntaxError(message: "missing ')'") }
                i += 1
            } else {
                atom = try parseAtom(flags)
            }
            atom = try parseRepeats(atom)
            items.append(atom)
        }
        return items.count == 1 ? items[0] : (items.isEmpty ? .empty : .concat(items))
    }

    private mutating func parseRepeats(_ atom0: Node) throws(SyntaxError) -> Node {
        var atom = atom0
        var repeated = false
        while let c = peek() {
            var minCount = 0
            var maxCount: Int?
            switch c {
            case "*": minCount = 0; maxCount = nil; i += 1
            case "+": minCount = 1; maxCount = nil; i += 1
            case "?": minCount = 0; maxCount = 1; i += 1
            case "{":
                guard let (lo, hi, next) = repeatBounds(at: i) else { return atom }   // a literal '{'
                minCount = lo; maxCount = hi; i = next
                if lo > RulesRegex.maxRepeat || (hi ?? 0) > RulesRegex.maxRepeat {
                    throw SyntaxError(message: "repetition count above \(RulesRegex.maxRepeat)")
                }
                if let hi, hi < lo { throw SyntaxError(message: "bad repetition range {\(lo),\(hi)}") }
            default:
                return atom
            }
            if repeated { throw SyntaxError(message: "bad repetition operator (a repetition of a repetition)") }
            var greedy = true
            if peek() == "?" { greedy = false; i += 1 }
            atom = .repeatNode(atom, min: minCount, max: maxCount, greedy: greedy)
            repeated = true
        }
        return atom
    }

    /// `{n}`, `{n,}` or `{n,m}` at `j0`: the bounds and the index after `}`.
    private func repeatBounds(at j0: Int) -> (Int, Int?, Int)? {
        var j = j0 + 1
        func number() -> Int? {
            var v = 0
            var digits = 0
            while j < s.count, s[j].value >= 48, s[j].value <= 57 {
                v = min(v * 10 + Int(s[j].value - 48), 1_000_000)
                digits += 1
                j += 1
            }
            return digits > 0 ? v : nil
        }
        guard let lo = number() else { return nil }
        var hi: Int? = lo
        if j < s.count, s[j] == "," {
            j += 1
            hi = number()
        }
        guard j < s.count, s[j] == "}" else { return nil }
        return (lo, hi, j + 1)
    }

    private mutating func parseAtom(_ flags: Flags) throws(SyntaxError) -> Node {
        let c = s[i]
        i += 1
        switch c {
        case ".": return .any(dotAll: flags.dotAll)
        case "^": return .assert(flags.multiLine ? .lineStart : .textStart)
        case "$": return .assert(flags.multiLine ? .lineEnd : .textEnd)
        case "[": return .set(try parseClass(flags))
        case "*", "+", "?": throw SyntaxError(message: "missing argument to repetition operator '\(c)'")
        case "\\": return try parseEscape(flags)
        default: return .char(c, fold: flags.caseInsensitive)
        }
    }

    private mutating func parseEscape(_ flags: Flags) throws(SyntaxError) -> Node {
        guard let e = peek() else { throw SyntaxError(message: "trailing backslash") }
        i += 1
        switch e {
        case "A": return .assert(.textStart)
        case "z": return .assert(.textEnd)
        case "b": return .assert(.wordBoundary)
        case "B": return .assert(.notWordBoundary)
        case "d", "D", "w", "W", "s", "S", "p", "P":
            var set = ScalarSet()
            try addClassEscape(e, to: &set)
            return .set(set)
        default:
            return .char(try escapedScalar(e), fold: flags.caseInsensitive)
        }
    }

    /// A single-scalar escape (after the backslash): `\n`, `\x41`, `\.`, …
    private mutating func escapedScalar(_ e: Unicode.Scalar) throws(SyntaxError) -> Unicode.Scalar {
        switch e {
        case "n": return "\n"
        case "t": return "\t"
        case "r": return "\r"
        case "f": return "\u{0C}"
        case "v": return "\u{0B}"
        case "a": return "\u{07}"
        case "x":
            var hex = ""
            if peek() == "{" {
                i += 1
                while let d = peek(), d != "}" { hex.unicodeScalars.append(d); i += 1 }
                guard peek() == "}" else { throw SyntaxError(message: "missing '}' in \\x{…}") }
                i += 1
            } else {
                for _ in 0..<2 {
                    guard let d = peek() else { break }
                    hex.unicodeScalars.append(d)
                    i += 1
                }
            }
            guard !hex.isEmpty, hex.count <= 8, let v = UInt32(hex, radix: 16), let sc = Unicode.Scalar(v) else {
                throw SyntaxError(message: "invalid \\x escape")
            }
            return sc
        default:
            if e.isASCII, !ScalarSet.isWord(e) { return e }   // escaped punctuation
            if e.properties.numericType != nil { throw SyntaxError(message: "backreferences are not supported") }
            throw SyntaxError(message: "invalid escape '\\\(e)'")
        }
    }

    private mutating func addClassEscape(_ e: Unicode.Scalar, to set: inout ScalarSet) throws(SyntaxError) {
        switch e {
        case "d": set.ranges += ScalarSet.digit
        case "D": set.ranges += ScalarSet.complement(ScalarSet.digit)
        case "w": set.ranges += ScalarSet.word
        case "W": set.ranges += ScalarSet.complement(ScalarSet.word)
        case "s": set.ranges += ScalarSet.space
        case "S": set.ranges += ScalarSet.complement(ScalarSet.space)
        case "p", "P":
            var name = ""
            if peek() == "{" {
                i += 1
                while let d = peek(), d != "}" { name.unicodeScalars.append(d); i += 1 }
                guard peek() == "}" else { throw SyntaxError(message: "missing '}' in \\p{…}") }
                i += 1
            } else if let d = peek() {
                name = String(d)
                i += 1
            }
            var negated = e == "P"
            if name.hasPrefix("^") { negated.toggle(); name.removeFirst() }
            guard let cats = Self.categories[name] else {
                throw SyntaxError(message: "unsupported Unicode class '\(name)'")
            }
            if negated, cats.count > 1 {
                // \PL: nothing in any of the categories. Express as the complement over a
                // positive set by listing the other categories.
                let others = Self.allCategories.filter { c in !cats.contains(c) }
                for c in others { set.categories.append((c, false)) }
            } else {
                for c in cats { set.categories.append((c, negated)) }
            }
        default:
            throw SyntaxError(message: "invalid class escape '\\\(e)'")
        }
    }

    private mutating func parseClass(_ flags: Flags) throws(SyntaxError) -> ScalarSet {
        var set = ScalarSet()
        set.fold = flags.caseInsensitive
        if peek() == "^" { set.negated = true; i += 1 }
        var first = true
        while true {
            guard let c = peek() else { throw SyntaxError(message: "missing ']'") }
            if c == "]", !first { i += 1; break }
            first = false
            if c == "[", i + 1 < s.count, s[i + 1] == ":" {
                // POSIX class [:name:]
                var j = i + 2
                var name = ""
                while j < s.count, s[j] != ":" { name.unicodeScalars.append(s[j]); j += 1 }
                guard j + 1 < s.count, s[j + 1] == "]" else { throw SyntaxError(message: "malformed POSIX class") }
                var negated = false
                if name.hasPrefix("^") { negated = true; name.removeFirst() }
                guard let rs = Self.posix[name] else { throw SyntaxError(message: "unknown POSIX class '\(name)'") }
                set.ranges += negated ? ScalarSet.complement(rs) : rs
                i = j + 2
                continue
            }
            var lo: Unicode.Scalar
            i += 1
            if c == "\\" {
                guard let e = peek() else { throw SyntaxError(message: "trailing backslash") }
                i += 1
                if "dDwWsSpP".unicodeScalars.contains(e) {
                    try addClassEscape(e, to: &set)
                    continue
                }
                lo = try escapedScalar(e)
            } else {
                lo = c
            }
            var hi = lo
            if peek() == "-", i + 1 < s.count, s[i + 1] != "]" {
                i += 1
                let d = s[i]
                i += 1
                if d == "\\" {
                    guard let e = peek() else { throw SyntaxError(message: "trailing backslash") }
                    i += 1
                    hi = try escapedScalar(e)
                } else {
                    hi = d
                }
                guard hi.value >= lo.value else { throw SyntaxError(message: "bad class range") }
            }
            set.ranges.append(lo.value...hi.value)
        }
        return set
    }

    static let posix: [String: [ClosedRange<UInt32>]] = [
        "alnum": [48...57, 65...90, 97...122], "alpha": [65...90, 97...122], "ascii": [0...127],
        "blank": [9...9, 32...32], "cntrl": [0...31, 127...127], "digit": [48...57],
        "graph": [33...126], "lower": [97...122], "print": [32...126],
        "punct": [33...47, 58...64, 91...96, 123...126], "space": [9...13, 32...32],
        "upper": [65...90], "word": [48...57, 65...90, 95...95, 97...122], "xdigit": [48...57, 65...70, 97...102],
    ]

    static let allCategories: [Unicode.GeneralCategory] = [
        .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
        .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber,
        .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
        .initialPunctuation, .finalPunctuation, .otherPunctuation, .mathSymbol, .currencySymbol,
        .modifierSymbol, .otherSymbol, .spaceSeparator, .lineSeparator, .paragraphSeparator,
        .control, .format, .surrogate, .privateUse, .unassigned,
    ]

    static let categories: [String: [Unicode.GeneralCategory]] = [
        "L": [.uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter],
        "Lu": [.uppercaseLetter], "Ll": [.lowercaseLetter], "Lt": [.titlecaseLetter],
        "Lm": [.modifierLetter], "Lo": [.otherLetter],
        "M": [.nonspacingMark, .spacingMark, .enclosingMark], "Mn": [.nonspacingMark],
        "Mc": [.spacingMark], "Me": [.enclosingMark],
        "N": [.decimalNumber, .letterNumber, .otherNumber], "Nd": [.decimalNumber],
        "Nl": [.letterNumber], "No": [.otherNumber],
        "P": [.connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
              .initialPunctuation, .finalPunctuation, .otherPunctuation],
        "Pc": [.connectorPunctuation], "Pd": [.dashPunctuation], "Ps": [.openPunctuation],
        "Pe": [.closePunctuation], "Pi": [.initialPunctuation], "Pf": [.finalPunctuation],
        "Po": [.otherPunctuation],
        "S": [.mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol], "Sm": [.mathSymbol],
        "Sc": [.currencySymbol], "Sk": [.modifierSymbol], "So": [.otherSymbol],
        "Z": [.spaceSeparator, .lineSeparator, .paragraphSeparator], "Zs": [.spaceSeparator],
        "Zl": [.lineSeparator], "Zp": [.paragraphSeparator],
        "C": [.control, .format, .surrogate, .privateUse, .unassigned], "Cc": [.control],
        "Cf": [.format], "Co": [.privateUse], "Cn": [.unassigned],
    ]
}

// MARK: - Compiler

private struct RegexCompiler {
    var code: [Inst] = []

    private mutating func append(_ inst: Inst) throws(RulesRegex.SyntaxError) {
        guard code.count < RulesRegex.maxInstructions else {
            throw RulesRegex.SyntaxError(message: "pattern too large")
        }
        code.append(inst)
    }

    mutating func emit(_ node: Node) throws(RulesRegex.SyntaxError) {
        switch node {
        case .empty:
            return
        case .char(let c, let fold):
            try append(.char(c, fold: fold))
        case .any(let dotAll):
            try append(.any(dotAll: dotAll))
        case .set(let s):
            try append(.set(s))
        case .assert(let a):
            try append(.assert(a))
        case .concat(let items):
            for item in items { try emit(item) }
        case .alt(let branches):
            // split L1, next; L1: branch0; jump end; next: split L2, … ; last branch
            var jumps: [Int] = []
            for (k, b) in branches.enumerated() {
                if k < branches.count - 1 {
                    let split = code.count
                    try append(.split(split + 1, -1))
                    try emit(b)
                    jumps.append(code.count)
                    try append(.jump(-1))
                    code[split] = .split(split + 1, code.count)
                } else {
                    try emit(b)
                }
            }
            for j in jumps { code[j] = .jump(code.count) }
        case .repeatNode(let inner, let lo, let hi, let greedy):
            for _ in 0..<lo { try emit(inner) }
            if let hi {
                // (inner (inner (…)?)?)? for the optional copies.
                var holes: [Int] = []
                for _ in lo..<hi {
                    let split = code.count
                    try append(.split(-1, -1))
                    holes.append(split)
                    try emit(inner)
                }
                for h in holes {
                    code[h] = greedy ? .split(h + 1, code.count) : .split(code.count, h + 1)
                }
            } else {
                // L: split body, end; body; jump L
                let split = code.count
                try append(.split(-1, -1))
                try emit(inner)
                try append(.jump(split))
                code[split] = greedy ? .split(split + 1, code.count) : .split(code.count, split + 1)
            }
        }
    }
}
