/// Methods of `string` values. `matches`, `split` and `replace` take regular expressions
/// (see ``RulesRegex`` for the syntax); sizes and ranges count Unicode scalars.
enum StringMethods {
    static func call(_ s: String, _ name: String, _ args: [RulesValue], _ ev: Evaluator) throws(EvalError) -> RulesValue {
        switch name {
        case "size":
            try Methods.arity("string", name, args, 0)
            return .int(Int64(s.unicodeScalars.count))
        case "lower":
            try Methods.arity("string", name, args, 0)
            return .string(s.lowercased())
        case "upper":
            try Methods.arity("string", name, args, 0)
            return .string(s.uppercased())
        case "trim":
            try Methods.arity("string", name, args, 0)
            let scalars = Array(s.unicodeScalars)
            var lo = 0, hi = scalars.count
            while lo < hi, scalars[lo].properties.isWhitespace { lo += 1 }
            while hi > lo, scalars[hi - 1].properties.isWhitespace { hi -= 1 }
            return .string(make(scalars[lo..<hi]))
        case "toUtf8":
            try Methods.arity("string", name, args, 0)
            return .bytes(Array(s.utf8))
        case "matches":
            try Methods.arity("string", name, args, 1)
            return .bool(try ev.regex(try pattern(args[0], name)).matchesWhole(s))
        case "split":
            try Methods.arity("string", name, args, 1)
            return .list(split(s, try ev.regex(try pattern(args[0], name))).map(RulesValue.string))
        case "replace":
            try Methods.arity("string", name, args, 2)
            guard case .string(let sub) = args[1] else { throw EvalError("string.replace() needs a string replacement") }
            return .string(replace(s, try ev.regex(try pattern(args[0], name)), with: sub))
        default:
            throw EvalError("string has no method '\(name)'")
        }
    }

    private static func pattern(_ v: RulesValue, _ method: String) throws(EvalError) -> String {
        guard case .string(let p) = v else { throw EvalError("string.\(method)() needs a string pattern, not \(v.typeName)") }
        return p
    }

    private static func make(_ scalars: ArraySlice<Unicode.Scalar>) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }

    /// Splits at every match of `re`. Empty matches split between characters, but never at the
    /// very start or end.
    static func split(_ s: String, _ re: RulesRegex) -> [String] {
        let input = Array(s.unicodeScalars)
        let n = input.count
        var parts: [String] = []
        var lastEnd = 0
        var from = 0
        while from <= n, let m = re.firstMatch(in: input, from: from) {
            if m.isEmpty {
                if m.lowerBound >= n { break }
                if m.lowerBound == lastEnd {
                    from = m.lowerBound + 1
                    continue
                }
                parts.append(make(input[lastEnd..<m.lowerBound]))
                lastEnd = m.lowerBound
                from = m.lowerBound + 1
            } else {
                parts.append(make(input[lastEnd..<m.lowerBound]))
                lastEnd = m.upperBound
                from = m.upperBound
            }
        }
        parts.append(make(input[lastEnd..<n]))
        return parts
    }

    /// Replaces every non-overlapping match of `re` with `sub` (taken literally).
    static func replace(_ s: String, _ re: RulesRegex, with sub: String) -> String {
        let input = Array(s.unicodeScalars)
        let n = input.count
        var out = ""
        var pos = 0
        var previousEnd = -1
        while pos <= n, let m = re.firstMatch(in: input, from: pos) {
            if m.isEmpty && m.lowerBound == previousEnd {
                // No empty match right after the previous match.
                if m.lowerBound < n { out += make(input[m.lowerBound...m.lowerBound]) }
                pos = m.lowerBound + 1
                continue
            }
            out += make(input[pos..<m.lowerBound])
            out += sub
            previousEnd = m.upperBound
            if m.isEmpty {
                if m.lowerBound < n { out += make(input[m.lowerBound...m.lowerBound]) }
                pos = m.lowerBound + 1
            } else {
                pos = m.upperBound
            }
        }
        if pos < n { out += make(input[pos..<n]) }
        return out
    }
}
