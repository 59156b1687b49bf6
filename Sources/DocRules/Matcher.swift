internal import DocModel

/// One segment of a request path, as the matcher sees it.
enum TargetSegment: Sendable, Equatable {
    /// A known segment.
    case known(String)
    /// Any single segment: the document id of a `list` request.
    case anyID
    /// Any number (zero or more) of segments: the unknown parents of a collection-group query.
    case anyPrefix
}

/// Matches request paths against `match` blocks.
///
/// Every block whose path (with the paths of the blocks around it) matches the *whole*
/// request path contributes its `allow` statements. `{name}` matches one segment;
/// `{name=**}` matches zero or more segments anywhere (rules_version '2') or one or more at the
/// end of a path only (version 1) and binds a `path`. A segment that stands for any document
/// id (a `list` request) is matched only by wildcards, never by literal text, because a rule
/// must hold for every document a query can return; its wildcard is unknown.
struct Matcher {
    let version: RulesVersion
    /// A bound on the number of distinct (block, bindings) matches, against pathological
    /// rule sets with many nested recursive wildcards.
    static let maxMatches = 1_000

    /// Every complete match: the chain of blocks from the root, with bindings.
    func matches(_ root: MatchBlock, _ target: [TargetSegment]) -> [MatchScope] {
        var out: [MatchScope] = []
        var budget = Self.maxMatches
        func visit(_ levels: [MatchScope.Level], _ pos: Int) {
            for child in levels[levels.count - 1].block.children {
                for (end, bindings) in match(child.pattern, target, from: pos, base: levels[levels.count - 1].bindings) {
                    guard budget > 0 else { return }
                    budget -= 1
                    let next = levels + [MatchScope.Level(block: child, bindings: bindings)]
                    if end == target.count, !child.rules.isEmpty { out.append(MatchScope(levels: next)) }
                    if !child.children.isEmpty { visit(next, end) }
                }
            }
        }
        visit([MatchScope.Level(block: root, bindings: [:])], 0)
        return out
    }

    /// Every way `pattern` matches a prefix of `target[from...]`: where it ends and the bindings.
    func match(_ pattern: [PatternSegment], _ target: [TargetSegment], from: Int,
               base: [String: RulesValue]) -> [(Int, [String: RulesValue])] {
        var results: [(Int, [String: RulesValue])] = []
        let n = target.count
        func go(_ pi: Int, _ ti: Int, _ bindings: [String: RulesValue]) {
            if pi == pattern.count {
                results.append((ti, bindings))
                return
            }
            switch pattern[pi] {
            case .literal(let s):
                guard ti < n, case .known(let t) = target[ti], equalUTF8(t, s) else { return }
                go(pi + 1, ti + 1, bindings)
            case .single(let name):
                guard ti < n else { return }
                var b = bindings
                switch target[ti] {
                case .known(let t): b[name] = .string(t)
                case .anyID: b[name] = .anyUnknown
                case .anyPrefix: return
                }
                go(pi + 1, ti + 1, b)
            case .recursive(let name):
                switch version {
                case .v1:
                    guard pi == pattern.count - 1, ti < n else { return }
                    var b = bindings
                    b[name] = Self.pathValue(target[ti..<n])
                    go(pi + 1, n, b)
                case .v2:
                    for end in ti...n {
                        var b = bindings
                        b[name] = Self.pathValue(target[ti..<end])
                        go(pi + 1, end, b)
                    }
                }
            }
        }
        go(0, from, base)
        return results
    }

    /// The value a recursive wildcard binds: the matched segments as a path (unknown when
    /// any of them is unknown).
    static func pathValue(_ segments: ArraySlice<TargetSegment>) -> RulesValue {
        var out: [String] = []
        for s in segments {
            guard case .known(let t) = s else { return .anyUnknown }
            out.append(t)
        }
        return .path(RulesPath(segments: out))
    }
}
