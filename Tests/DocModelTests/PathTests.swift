import Testing
@testable import DocModel
import DocTestTraits

@Suite("Paths", .cpuBound)
struct PathTests {
    @Test(arguments: ["a/b", "/a/b/", "a/b/c/d", "users/alice/orders/o1"])
    func validDocumentKeys(_ text: String) throws {
        let key = try DocumentKey(text)
        #expect(key.path.count % 2 == 0)
        #expect(try DocumentKey(key.description) == key)
    }

    @Test(arguments: [
        ("a", "even number of segments"),
        ("a/b/c", "even number of segments"),
        ("a//b", "must not be empty"),
        ("a/../b/c", "not allowed"),
        ("a/__x__", "reserved"),
    ])
    func invalidDocumentKeys(_ text: String, _ fragment: String) {
        do {
            _ = try DocumentKey(text)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(fragment), "\(error)")
            #expect(error.location?.contains(text) == true, "location names the path: \(error)")
        }
    }

    @Test func segmentErrorNamesTheSegment() {
        #expect(throws: DocError.self) { try ResourcePath("a/" + String(repeating: "x", count: 1501)) }
        do { _ = try ResourcePath("a/b//c") } catch { #expect(error.location?.contains("segment 3") == true) }
    }

    @Test func keyParts() throws {
        let key = try DocumentKey("users/alice/orders/o1")
        #expect(key.documentID == "o1")
        #expect(key.collectionGroup == "orders")
        #expect(key.collectionPath == (try ResourcePath("users/alice/orders")))
        #expect(key.isIn(collection: try ResourcePath("users/alice/orders")))
        #expect(!key.isIn(collection: try ResourcePath("users")))
    }

    @Test func pathsOrderBySegmentsThenLength() throws {
        let sorted = try ["a/a", "a/a/b/b", "a/b", "a/b/a/a", "aa/a", "b/a"].map { try DocumentKey($0) }
        #expect(sorted == sorted.shuffled().sorted())
        // "a/b" sorts before "a-/x" segment-wise ('a' < 'a-'), unlike a plain string sort.
        #expect(try DocumentKey("a/b/c/d") < DocumentKey("a-/x"))
    }

    @Test(arguments: [
        ("a", ["a"]), ("a.b.c", ["a", "b", "c"]), ("`a.b`.c", ["a.b", "c"]),
        ("`a\\`b`", ["a`b"]), ("`a\\\\b`", ["a\\b"]), ("`` ", [] as [String]), ("__name__", ["__name__"]),
        ("`😀 x`.y", ["😀 x", "y"]),
    ])
    func fieldPathParsing(_ text: String, _ segments: [String]) throws {
        if segments.isEmpty {
            #expect(throws: DocError.self) { try FieldPath(text) }
            return
        }
        let path = try FieldPath(text)
        #expect(path.segments == segments)
        #expect(try FieldPath(path.canonicalString) == path, "canonical form reparses")
    }

    @Test(arguments: ["", ".", "a.", ".a", "a..b", "`a", "a`b`", "`a`b", "a~b", "a*", "a/b", "a[0]"])
    func invalidFieldPaths(_ text: String) {
        #expect(throws: DocError.self) { try FieldPath(text) }
    }

    @Test func fieldPathLimit() throws {
        _ = try FieldPath(String(repeating: "a", count: 1500))
        #expect(throws: DocError.self) { try FieldPath(String(repeating: "a", count: 1501)) }
    }

    @Test func canonicalFieldPathQuotesOnlyWhenNeeded() throws {
        #expect(try FieldPath(segments: ["a", "b c", "_x1", "1a"]).canonicalString == "a.`b c`._x1.`1a`")
    }
}

@Suite("Unicode edge cases", .cpuBound)
struct UnicodeEdgeCaseTests {
    @Test func dotBeforeCombiningMarkSeparatesFieldSegments() throws {
        let path = try FieldPath("a.\u{301}b")
        #expect(path.segments.count == 2)
        #expect(path.segments[1].unicodeScalars.first == "\u{301}")
    }

    @Test func mapKeysAreIdenticalOnlyWhenTheirBytesAre() {
        let composed = Value.map(["\u{E9}": 1])
        let decomposed = Value.map(["e\u{301}": 1])
        #expect(!composed.isIdentical(to: decomposed))
        #expect(composed != decomposed)
        #expect(ObjectValue(["\u{E9}": 1]) != ObjectValue(["e\u{301}": 1]))
    }

    @Test func pathsAreEqualAndHashAlikeExactlyWhenTheirBytesAre() throws {
        // Separately made strings (no shared storage), the same path from a shared array, and
        // look-alikes that differ in one byte or only in Unicode normalization.
        let a = try ResourcePath("users/\u{E9}le/orders/o1")
        let b = try ResourcePath(["users", String("\u{E9}le".reversed().reversed()), "orders", "o" + "1"].joined(separator: "/"))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a == (try ResourcePath(segments: a.segments)))
        #expect(Set([a, b]).count == 1)
        for other in ["users/e\u{301}le/orders/o1", "users/\u{E9}le/orders/o2", "users/\u{E9}le/orders", "users/\u{E9}le/orders/o1/x/y"] {
            let c = try ResourcePath(other)
            #expect(a != c, "\(other)")
            #expect(Set([a, c]).count == 2, "\(other)")
        }
        let f = try FieldPath(segments: ["\u{E9}", "b"])
        #expect(f == (try FieldPath(segments: [String("\u{E9}".reversed()), "b"])))
        #expect(f.hashValue == (try FieldPath(segments: ["\u{E9}", "b"])).hashValue)
        #expect(f != (try FieldPath(segments: ["e\u{301}", "b"])))
    }
}

@Suite("Field path length", .cpuBound)
struct FieldPathLengthTests {
    @Test func canonicalByteCountEqualsTheCanonicalStringLength() throws {
        var rng = SplitMix64(seed: 7)
        let pieces = ["a", "b_1", "x y", "`", "\\", "é", "😀", "1a", ".", "__", "Z9"]
        for _ in 0..<2_000 {
            let segments = (0..<Int.random(in: 1...4, using: &rng)).map { _ in
                (0..<Int.random(in: 1...3, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
            }
            let path = try FieldPath(segments: segments)
            #expect(path.canonicalByteCount == path.canonicalString.utf8.count, "\(segments)")
        }
    }
}

@Suite("Reserved names", .cpuBound)
struct ReservedNameTests {
    @Test(arguments: [
        ("__a__", true), ("__name__", true), ("__\u{301}x__", true), ("_____", true),
        ("____", false), ("__a_", false), ("_a__", false), ("a__b__", false), ("", false), ("__é", false),
    ])
    func reservedNamesAreTheDunderFormOnBytes(name: String, reserved: Bool) {
        #expect(isReservedName(name) == reserved, "\(name.debugDescription)")
    }
}
