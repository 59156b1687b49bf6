import Foundation

/// Seeded random edits of a frame's JSON, for the fuzz tests: each ``mutate(_:)`` replaces one
/// node (mostly by a value of the same kind, so the frame still decodes and the edit reaches
/// deeper code: a number by an extreme one, a string by an odd one; otherwise by a typed `$…`
/// form out of range, a container, `null`), drops a key, or repeats or drops an array element.
/// The frame's `type` is edited rarely: a frame refused whole tests little.
public struct JSONMutator: Sendable {
    private var random: SplitMix64

    public init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    /// A number in `range`, from the mutator's generator (so a test's other choices share its seed).
    public mutating func int(in range: Range<Int>) -> Int { Int.random(in: range, using: &random) }

    /// `text` (a JSON object) with one or two edits; `nil` when it is not JSON.
    public mutating func mutate(text: String) -> String? {
        guard let tree = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else { return nil }
        var edited = mutate(tree)
        if int(in: 0..<4) == 0 { edited = mutate(edited) }
        guard let data = try? JSONSerialization.data(withJSONObject: edited, options: [.fragmentsAllowed]) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// `tree` (a JSONSerialization tree) with one node replaced, or one key or element dropped.
    public mutating func mutate(_ tree: Any) -> Any {
        switch tree {
        case var object as [String: Any] where !object.isEmpty:
            let keys = object.keys.sorted()
            let others = keys.filter { !Self.structural.contains($0) }
            var key = keys[int(in: 0..<keys.count)]
            if Self.structural.contains(key), !others.isEmpty, int(in: 0..<10) > 0 { key = others[int(in: 0..<others.count)] }
            switch int(in: 0..<10) {
            case 0: object[key] = nil
            case 1: object[key] = leaf()
            default: object[key] = mutate(object[key]!)
            }
            return object
        case var array as [Any] where !array.isEmpty:
            let i = int(in: 0..<array.count)
            switch int(in: 0..<8) {
            case 0: array.append(array[i])
            case 1: array.remove(at: i)
            default: array[i] = mutate(array[i])
            }
            return array
        default:
            if int(in: 0..<10) < 7 {
                if tree is String { return Self.strings[int(in: 0..<Self.strings.count)] }
                if tree is NSNumber, !(tree is Bool) { return Self.numbers[int(in: 0..<Self.numbers.count)] }
            }
            return leaf()
        }
    }

    /// Keys whose edit makes most frames unreadable as a whole.
    static let structural: Set<String> = ["type", "clientId"]

    static var numbers: [Any] {
        [
            0, -1, 1, 2, 7, Int64.max, Int64.min, Int64.max - 1, Int64(Int32.max) + 1, Int64(Int32.min), 9_007_199_254_740_993,
            1e308, -1e308, 0.5, -0.0, 100_000, 1_000_000_000,
        ]
    }

    static var strings: [Any] {
        [
            "", "a", "notes", "notes/a", "notes/a/b", "a//b", "__name__", "`", String(repeating: "x", count: 3_000), "\u{0}",
            "é😀", "2024-05-01T12:00:00Z", "0000-01-01T00:00:00Z", "accounts/a", "invoices/i1", "NaN", "AQ==", "!!", "current",
            "removed", "reset", "noChange",
        ]
    }

    private mutating func typed() -> Any {
        let seconds = Self.numbers[int(in: 0..<Self.numbers.count)]
        let nanos: Any = [0, 999_999_999, 1_000_000_000, -1][int(in: 0..<4)]
        let choices: [Any] = [
            ["$timestamp": ["seconds": seconds, "nanos": nanos]], ["$timestamp": "9999-12-31T23:59:59.999999999Z"],
            ["$timestamp": Self.strings[int(in: 0..<Self.strings.count)]],
            ["$double": "NaN"], ["$double": "-Infinity"], ["$bytes": "!!"], ["$bytes": "AAEC"], ["$ref": "notes/a"], ["$ref": "a"],
            ["$geo": [91, 0]], ["$geo": [seconds, seconds]], ["$map": ["$ref": 1]], [] as [Any], [:] as [String: Any], NSNull(), true,
            [[1]], ["a": [[1]]],
        ]
        return choices[int(in: 0..<choices.count)]
    }

    private mutating func leaf() -> Any {
        switch int(in: 0..<3) {
        case 0: Self.numbers[int(in: 0..<Self.numbers.count)]
        case 1: Self.strings[int(in: 0..<Self.strings.count)]
        default: typed()
        }
    }
}
