internal import DocModel

/// `Codable` support for frames: a DocModel `Value` written through any `Encoder` and read
/// from any `Decoder`, with the typed escapes of DocModel's canonical JSON (`{"$timestamp":
/// …}`, `{"$bytes": …}`, `{"$ref": …}`, `{"$attachment": …}`, `{"$geo": […]}`, `{"$double": …}`, `{"$map": {…}}`).
///
/// ``FrameEncoder`` and ``FrameDecoder`` do not go through here: they read and write JSON
/// with DocModel's own strict reader and writer, which keep integers and doubles apart
/// exactly. Through other coders (e.g. Foundation's `JSONEncoder`), doubles with an integral
/// value are written as `{"$double": n}` so they read back as doubles; what a foreign decoder
/// reports as an integer becomes an integer.
struct WireValue: Codable {
    var value: Value

    init(_ value: Value) { self.value = value }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        switch value {
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .boolean(let b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case .integer(let i):
            var c = encoder.singleValueContainer()
            try c.encode(i)
        case .double(let d):
            if d.isFinite && d.rounded(.towardZero) != d {
                var c = encoder.singleValueContainer()
                try c.encode(d)
            } else if d.isFinite {
                var c = encoder.container(keyedBy: Key.self)
                try c.encode(d, forKey: Key("$double"))
            } else {
                var c = encoder.container(keyedBy: Key.self)
                try c.encode(d.isNaN ? "NaN" : (d < 0 ? "-Infinity" : "Infinity"), forKey: Key("$double"))
            }
        case .string(let s):
            var c = encoder.singleValueContainer()
            try c.encode(s)
        case .timestamp(let t):
            var c = encoder.container(keyedBy: Key.self)
            if t.seconds >= Timestamp.minSeconds && t.seconds <= Timestamp.maxSeconds {
                try c.encode(t.rfc3339, forKey: Key("$timestamp"))
            } else {
                var inner = c.nestedContainer(keyedBy: Key.self, forKey: Key("$timestamp"))
                try inner.encode(t.seconds, forKey: Key("seconds"))
                try inner.encode(Int64(t.nanos), forKey: Key("nanos"))
            }
        case .bytes(let b):
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(Base64.encode(b), forKey: Key("$bytes"))
        case .reference(let k):
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(k.path.canonicalString, forKey: Key("$ref"))
        case .attachment(let id):
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(id.hex, forKey: Key("$attachment"))
        case .geoPoint(let g):
            var c = encoder.container(keyedBy: Key.self)
            var inner = c.nestedUnkeyedContainer(forKey: Key("$geo"))
            try inner.encode(g.latitude)
            try inner.encode(g.longitude)
        case .array(let elements):
            var c = encoder.unkeyedContainer()
            for e in elements { try c.encode(WireValue(e)) }
        case .map(let fields):
            var c = encoder.container(keyedBy: Key.self)
            if fields.count == 1, let key = fields.keys.first, key.hasPrefix("$") {
                var inner = c.nestedContainer(keyedBy: Key.self, forKey: Key("$map"))
                for (k, v) in fields { try inner.encode(WireValue(v), forKey: Key(k)) }
            } else {
                for (k, v) in fields { try c.encode(WireValue(v), forKey: Key(k)) }
            }
        }
    }

    init(from decoder: any Decoder) throws {
        if let c = try? decoder.singleValueContainer() {
            if c.decodeNil() { value = .null; return }
            if let b = try? c.decode(Bool.self) { value = .boolean(b); return }
            if let i = try? c.decode(Int64.self) { value = .integer(i); return }
            if let d = try? c.decode(Double.self) { value = .double(d); return }
            if let s = try? c.decode(String.self) { value = .string(s); return }
        }
        if var c = try? decoder.unkeyedContainer() {
            var elements: [Value] = []
            while !c.isAtEnd { elements.append(try c.decode(WireValue.self).value) }
            value = .array(elements)
            return
        }
        let c = try decoder.container(keyedBy: Key.self)
        let keys = c.allKeys
        if keys.count == 1, keys[0].stringValue == "$map" {
            // A map taken literally: its own keys are never escapes.
            let literal = try c.nestedContainer(keyedBy: Key.self, forKey: keys[0])
            var fields: [String: Value] = [:]
            for key in literal.allKeys { fields[key.stringValue] = try literal.decode(WireValue.self, forKey: key).value }
            value = .map(fields)
            return
        }
        var fields: [String: Value] = [:]
        for key in keys { fields[key.stringValue] = try c.decode(WireValue.self, forKey: key).value }
        if fields.count == 1, let (name, payload) = fields.first, name.hasPrefix("$") {
            // Let DocModel interpret the escape (or keep a plain map for unknown `$` keys).
            do {
                value = try Value(json: Value.map([name: payload]).escapedJSON)
            } catch {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.description))
            }
            return
        }
        value = .map(fields)
    }
}

extension Value {
    /// The JSON text of a one-member map written *without* the `$map` wrapper, so that
    /// DocModel's reader interprets its key as an escape.
    fileprivate var escapedJSON: String {
        guard case .map(let m) = self, let (key, payload) = m.first else { return jsonString }
        return "{" + Value.string(key).jsonString + ":" + payload.jsonString + "}"
    }
}
