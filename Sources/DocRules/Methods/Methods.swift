internal import DocModel
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Method dispatch: `receiver.name(args)` by the receiver's type.
enum Methods {
    static func call(_ receiver: RulesValue, _ name: String, _ args: [RulesValue], _ ev: Evaluator) throws(EvalError) -> RulesValue {
        if ev.symbolic, receiver.containsUnknown || args.contains(where: \.containsUnknown) {
            return try SymbolicMethods.call(receiver, name, args, ev) ?? .anyUnknown
        }
        switch receiver {
        case .namespace(let ns): return try Builtins.namespace(ns, name, args, ev)
        case .map(let m): return try MapMethods.call(m, name, args)
        case .list(let l): return try ListMethods.call(l, name, args)
        case .set(let s): return try SetMethods.call(s, name, args)
        case .string(let s): return try StringMethods.call(s, name, args, ev)
        case .timestamp(let t): return try TimeMethods.timestamp(t, name, args)
        case .duration(let d): return try TimeMethods.duration(d, name, args)
        case .mapDiff(let d): return try mapDiff(d, name, args)
        case .latlng(let g): return try latlng(g, name, args)
        case .bytes(let b): return try bytes(b, name, args)
        case .path(let p): return try path(p, name, args)
        case .null: throw EvalError("cannot call '\(name)()' on null")
        default: throw EvalError("\(receiver.typeName) has no method '\(name)'")
        }
    }

    static func arity(_ type: String, _ name: String, _ args: [RulesValue], _ n: Int) throws(EvalError) {
        guard args.count == n else {
            throw EvalError("\(type).\(name)() takes \(n) argument\(n == 1 ? "" : "s"), got \(args.count)")
        }
    }

    private static func mapDiff(_ d: MapDiff, _ name: String, _ args: [RulesValue]) throws(EvalError) -> RulesValue {
        try arity("map_diff", name, args, 0)
        switch name {
        case "addedKeys": return .set(d.addedKeys)
        case "removedKeys": return .set(d.removedKeys)
        case "changedKeys": return .set(d.changedKeys)
        case "affectedKeys": return .set(d.affectedKeys)
        case "unchangedKeys": return .set(d.unchangedKeys)
        default: throw EvalError("map_diff has no method '\(name)'")
        }
    }

    private static func latlng(_ g: GeoPoint, _ name: String, _ args: [RulesValue]) throws(EvalError) -> RulesValue {
        switch name {
        case "latitude": try arity("latlng", name, args, 0); return .float(g.latitude)
        case "longitude": try arity("latlng", name, args, 0); return .float(g.longitude)
        case "distance":
            try arity("latlng", name, args, 1)
            guard case .latlng(let o) = args[0] else { throw EvalError("latlng.distance() needs a latlng") }
            return .float(haversine(g, o))
        default: throw EvalError("latlng has no method '\(name)'")
        }
    }

    /// Great-circle distance in meters on a sphere of the Earth's mean radius.
    static func haversine(_ a: GeoPoint, _ b: GeoPoint) -> Double {
        let r = 6_371_008.8
        let rad = Double.pi / 180
        let dLat = (b.latitude - a.latitude) * rad
        let dLng = (b.longitude - a.longitude) * rad
        let sLat = sin(dLat / 2), sLng = sin(dLng / 2)
        let h = sLat * sLat + cos(a.latitude * rad) * cos(b.latitude * rad) * sLng * sLng
        return 2 * r * asin(min(1, h.squareRoot()))
    }

    private static func bytes(_ b: [UInt8], _ name: String, _ args: [RulesValue]) throws(EvalError) -> RulesValue {
        try arity("bytes", name, args, 0)
        switch name {
        case "size": return .int(Int64(b.count))
        case "toHexString":
            let digits = Array("0123456789ABCDEF".utf8)
            var out: [UInt8] = []
            for x in b { out.append(digits[Int(x >> 4)]); out.append(digits[Int(x & 15)]) }
            return .string(String(decoding: out, as: UTF8.self))
        case "toBase64":
            return .string(Base64.encode(b))
        default: throw EvalError("bytes has no method '\(name)'")
        }
    }

    private static func path(_ p: RulesPath, _ name: String, _ args: [RulesValue]) throws(EvalError) -> RulesValue {
        switch name {
        case "size":
            try arity("path", name, args, 0)
            return .int(Int64(p.segments.count))
        default:
            throw EvalError("path has no method '\(name)'")
        }
    }
}

/// Methods of `map` values.
enum MapMethods {
    static func sortedKeys(_ m: [String: RulesValue]) -> [String] {
        m.keys.sorted { RulesValue.order(.string($0), .string($1))! < 0 }
    }

    static func call(_ m: [String: RulesValue], _ name: String, _ args: [RulesValue]) throws(EvalError) -> RulesValue {
        switch name {
        case "keys":
            try Methods.arity("map", name, args, 0)
            return .list(sortedKeys(m).map(RulesValue.string))
        case "values":
            try Methods.arity("map", name, args, 0)
            return .list(sortedKeys(m).map { m[$0]! })
        case "size":
            try Methods.arity("map", name, args, 0)
            return .int(Int64(m.count))
        case "get":
            try Methods.arity("map", name, args, 2)
            return try get(m, args[0], default: args[1])
        case "diff":
            try Methods.arity("map", name, args, 1)
            guard case .map(let other) = args[0] else {
                throw EvalError("map.diff() needs a map, not \(args[0].typeName)")
            }
            return .mapDiff(MapDiff(lhs: m, rhs: other))
        default:
            throw EvalError("map has no method '\(name)'")
        }
    }

    /// `map.get(key, default)`; `key` may be a list of keys naming a nested field.
    static func get(_ m: [String: RulesValue], _ key: RulesValue, default d: RulesValue) throws(EvalError) -> RulesValue {
        switch key {
        case .string(let k):
            return m[k] ?? d
        case .list(let keys):
            guard !keys.isEmpty else { throw EvalError("map.get() needs at least one key") }
            var current: RulesValue = .map(m)
            for k in keys {
                guard case .string(let s) = k else { throw EvalError("map.get() keys must be strings, not \(k.typeName)") }
                guard case .map(let inner) = current, let v = inner[s] else { return d }
                current = v
            }
            return current
        default:
            throw EvalError("map.get() needs a string or a list of strings, not \(key.typeName)")
        }
    }
}

/// Methods of `list` values.
enum ListMethods {
    /// The elements of a list or set argument.
    static func elements(_ v: RulesValue, _ what: String) throws(EvalError) -> [RulesValue] {
        switch v {
        case .list(let l): return l
        case .set(let s): return Array(s)
        default: throw EvalError("\(what) needs a list or set, not \(v.typeName)")
        }
    }

    static func call(_ l: [RulesValue], _ name: String, _ args: [RulesValue]) throws(EvalError) -> RulesValue {
        switch name {
        case "size":
            try Methods.arity("list", name, args, 0)
            return .int(Int64(l.count))
        case "hasAll":
            try Methods.arity("list", name, args, 1)
            let mine = Set(l)
            return .bool(try elements(args[0], "list.hasAll()").allSatisfy { mine.contains($0) })
        case "hasAny":
            try Methods.arity("list", name, args, 1)
            let mine = Set(l)
            return .bool(try elements(args[0], "list.hasAny()").contains { mine.contains($0) })
        case "hasOnly":
            try Methods.arity("list", name, args, 1)
            let allowed = Set(try elements(args[0], "list.hasOnly()"))
            return .bool(l.allSatisfy { allowed.contains($0) })
        case "concat":
            try Methods.arity("list", name, args, 1)
            guard case .list(let other) = args[0] else { throw EvalError("list.concat() needs a list, not \(args[0].typeName)") }
            return .list(l + other)
        case "join":
            try Methods.arity("list", name, args, 1)
            guard case .string(let sep) = args[0] else { throw EvalError("list.join() needs a string separator") }
            var parts: [String] = []
            for x in l {
                guard case .string(let s) = x else { throw EvalError("list.join() needs a list of strings, found \(x.typeName)") }
                parts.append(s)
            }
            return .string(parts.joined(separator: sep))
        case "removeAll":
            try Methods.arity("list", name, args, 1)
            let drop = Set(try elements(args[0], "list.removeAll()"))
            return .list(l.filter { !drop.contains($0) })
        case "toSet":
            try Methods.arity("list", name, args, 0)
            return .set(Set(l))
        default:
            throw EvalError("list has no method '\(name)'")
        }
    }
}

/// Methods of `set` values.
enum SetMethods {
    static func call(_ s: Set<RulesValue>, _ name: String, _ args: [RulesValue]) throws(EvalError) -> RulesValue {
        switch name {
        case "size":
            try Methods.arity("set", name, args, 0)
            return .int(Int64(s.count))
        case "hasAll":
            try Methods.arity("set", name, args, 1)
            return .bool(try ListMethods.elements(args[0], "set.hasAll()").allSatisfy { s.contains($0) })
        case "hasAny":
            try Methods.arity("set", name, args, 1)
            return .bool(try ListMethods.elements(args[0], "set.hasAny()").contains { s.contains($0) })
        case "hasOnly":
            try Methods.arity("set", name, args, 1)
            let allowed = Set(try ListMethods.elements(args[0], "set.hasOnly()"))
            return .bool(s.allSatisfy { allowed.contains($0) })
        case "union":
            try Methods.arity("set", name, args, 1)
            return .set(s.union(try ListMethods.elements(args[0], "set.union()")))
        case "intersection":
            try Methods.arity("set", name, args, 1)
            return .set(s.intersection(try ListMethods.elements(args[0], "set.intersection()")))
        case "difference":
            try Methods.arity("set", name, args, 1)
            return .set(s.subtracting(try ListMethods.elements(args[0], "set.difference()")))
        default:
            throw EvalError("set has no method '\(name)'")
        }
    }
}
