import DocModel
@testable import DocRules
import Testing
import DocTestTraits

/// Expression tables: each row is (expression, expected value); `nil` means "an evaluation error".
@Suite(.cpuBound) struct EvaluatorTests {
    static func check(_ rows: [(String, RulesValue?)]) {
        for (source, expected) in rows {
            let got: RulesValue?
            do {
                got = try evaluate(source)
            } catch let e as RulesError {
                Issue.record("\(source) does not parse: \(e)")
                continue
            } catch {
                got = nil
            }
            if let expected {
                #expect(got.map { RulesValue.equal($0, expected) && $0.typeName == expected.typeName } == true,
                        "\(source) → \(got.map(\.description) ?? "error"), expected \(expected)")
            } else {
                #expect(got == nil, "\(source) → \(got!.description), expected an error")
            }
        }
    }

    @Test func literals() {
        Self.check([
            ("null", .null), ("true", .bool(true)), ("false", .bool(false)), ("0", .int(0)), ("-12", .int(-12)),
            ("1.5", .float(1.5)), ("'s'", .string("s")), ("\"d\"", .string("d")), ("[]", .list([])),
            ("[1, 'a']", .list([.int(1), .string("a")])), ("{'a': 1}", .map(["a": .int(1)])),
            ("{'a': 1, 'a': 2}.a", .int(2)), ("{1: 2}", nil),
            ("/databases/x/documents/a/b", .path(RulesPath(segments: ["databases", "x", "documents", "a", "b"]))),
            ("0x10", .int(16)),
        ])
    }

    @Test func integerAndFloatArithmetic() {
        Self.check([
            ("2 + 3", .int(5)), ("2 - 3", .int(-1)), ("2 * 3", .int(6)), ("7 / 2", .int(3)), ("-7 / 2", .int(-3)),
            ("7 % 3", .int(1)), ("-7 % 3", .int(-1)), ("7.0 / 2", .float(3.5)), ("1 + 0.5", .float(1.5)),
            ("0.5 * 4", .float(2.0)), ("5.5 % 2", .float(1.5)), ("1.0 / 0", .float(.infinity)),
            ("9223372036854775807 + 1", nil), ("-9223372036854775808 - 1", nil), ("9223372036854775807 * 2", nil),
            ("-(-9223372036854775808)", nil), ("-9223372036854775808 / -1", nil), ("1 / 0", nil), ("1 % 0", nil),
            ("'a' * 2", nil), ("null + 1", nil), ("true + true", nil), ("-'a'", nil), ("!1", nil),
        ])
    }

    @Test func equalityAndComparison() {
        Self.check([
            ("1 == 1.0", .bool(true)), ("1 != 1.0", .bool(false)), ("1 == '1'", .bool(false)), ("null == null", .bool(true)),
            ("null == false", .bool(false)), ("[1, 2] == [1, 2.0]", .bool(true)), ("[1, 2] == [2, 1]", .bool(false)),
            ("{'a': 1, 'b': [2]} == {'b': [2], 'a': 1}", .bool(true)), ("{'a': 1} == {'a': 1, 'b': 2}", .bool(false)),
            ("[1, 2].toSet() == [2, 1, 1].toSet()", .bool(true)), ("[1].toSet() == [1]", .bool(false)),
            ("1 < 2", .bool(true)), ("2 <= 2.0", .bool(true)), ("3 > 2.5", .bool(true)), ("'a' < 'b'", .bool(true)),
            ("'B' < 'a'", .bool(true)), ("'ab' > 'a'", .bool(true)), ("1 < 'a'", nil), ("null < 1", nil), ("[1] < [2]", nil),
            ("0.0 / 0.0 == 0.0 / 0.0", .bool(false)), ("0.0 / 0.0 < 1", .bool(false)),
            ("9007199254740993 == 9007199254740992.0", .bool(false)), ("9007199254740992 == 9007199254740992.0", .bool(true)),
            ("timestamp.value(1000) < timestamp.value(2000)", .bool(true)),
            ("duration.value(1, 's') > duration.value(999, 'ms')", .bool(true)),
        ])
    }

    @Test func logicAndErrorSemantics() {
        Self.check([
            ("true && true", .bool(true)), ("true && false", .bool(false)), ("false || true", .bool(true)),
            ("false || false", .bool(false)),
            // errors are absorbed by the deciding value on either side
            ("{}.x || true", .bool(true)), ("true || {}.x", .bool(true)), ("{}.x && false", .bool(false)),
            ("false && {}.x", .bool(false)),
            // …and propagate otherwise
            ("{}.x || false", nil), ("false || {}.x", nil), ("{}.x && true", nil), ("true && {}.x", nil),
            ("{}.x || {}.y", nil),
            // non-bool operands are errors
            ("1 && true", nil), ("true && 1", nil), ("1 || true", .bool(true)), ("'a' || false", nil),
            ("!true", .bool(false)), ("!!true", .bool(true)),
            ("true ? 1 : {}.x", .int(1)), ("false ? {}.x : 2", .int(2)), ("1 ? 2 : 3", nil), ("{}.x ? 1 : 2", nil),
        ])
    }

    @Test func inAndIs() {
        Self.check([
            ("1 in [1, 2]", .bool(true)), ("3 in [1, 2]", .bool(false)), ("1.0 in [1]", .bool(true)),
            ("'a' in {'a': 1}", .bool(true)), ("'b' in {'a': 1}", .bool(false)), ("1 in {'a': 1}", nil),
            ("'a' in ['a'].toSet()", .bool(true)), ("'a' in 'abc'", nil), ("[1] in [[1], [2]]", .bool(true)),
            ("true is bool", .bool(true)), ("1 is int", .bool(true)), ("1 is float", .bool(false)),
            ("1.0 is float", .bool(true)), ("1 is number", .bool(true)), ("1.5 is number", .bool(true)),
            ("'a' is string", .bool(true)), ("[1] is list", .bool(true)), ("{} is map", .bool(true)),
            ("[1].toSet() is set", .bool(true)), ("request.time is timestamp", .bool(true)),
            ("duration.value(1, 'h') is duration", .bool(true)), ("/a/b is path", .bool(true)),
            ("latlng.value(1, 2) is latlng", .bool(true)), ("'a'.toUtf8() is bytes", .bool(true)),
            ("null is map", .bool(false)), ("{}.diff({}) is map_diff", .bool(true)), ("1 is boolean", .bool(false)),
            ("1 is integer", .bool(true)),
        ])
    }

    @Test func mapsAndFieldAccess() {
        Self.check([
            ("{'a': 1}.a", .int(1)), ("{'a': 1}['a']", .int(1)), ("{'a': 1}.b", nil), ("{'a': 1}['b']", nil),
            ("{'a': {'b': 2}}.a.b", .int(2)), ("null.a", nil), ("'s'.a", nil), ("{'a': 1}[1]", nil),
            ("{'b': 2, 'a': 1}.keys()", .list([.string("a"), .string("b")])),
            ("{'b': 2, 'a': 1}.values()", .list([.int(1), .int(2)])), ("{'a': 1}.size()", .int(1)),
            ("{'a': 1}.get('a', 0)", .int(1)), ("{'a': 1}.get('z', 0)", .int(0)),
            ("{'a': {'b': 3}}.get(['a', 'b'], 0)", .int(3)), ("{'a': {'b': 3}}.get(['a', 'c'], 0)", .int(0)),
            ("{'a': 1}.get(['a', 'c'], 0)", .int(0)), ("{'a': 1}.get(1, 0)", nil), ("{'a': 1}.get('a')", nil),
            ("{'a': 1, 'b': 2, 'c': 3}.diff({'b': 2, 'c': 4, 'd': 5}).addedKeys() == ['a'].toSet()", .bool(true)),
            ("{'a': 1, 'b': 2, 'c': 3}.diff({'b': 2, 'c': 4, 'd': 5}).removedKeys() == ['d'].toSet()", .bool(true)),
            ("{'a': 1, 'b': 2, 'c': 3}.diff({'b': 2, 'c': 4, 'd': 5}).changedKeys() == ['c'].toSet()", .bool(true)),
            ("{'a': 1, 'b': 2, 'c': 3}.diff({'b': 2, 'c': 4, 'd': 5}).unchangedKeys() == ['b'].toSet()", .bool(true)),
            ("{'a': 1, 'b': 2, 'c': 3}.diff({'b': 2, 'c': 4, 'd': 5}).affectedKeys() == ['a', 'c', 'd'].toSet()", .bool(true)),
            ("{'a': 1}.diff({'a': 1.0}).changedKeys().size()", .int(0)), ("{'a': 1}.diff(1)", nil),
            ("{}.nosuch()", nil),
        ])
    }

    @Test func lists() {
        Self.check([
            ("[1, 2, 3][0]", .int(1)), ("[1, 2, 3][3]", nil), ("[1][-1]", nil), ("[1]['a']", nil),
            ("[1, 2, 3, 4][1:3]", .list([.int(2), .int(3)])), ("[1, 2, 3][:2]", .list([.int(1), .int(2)])),
            ("[1, 2, 3][1:]", .list([.int(2), .int(3)])), ("[1, 2][1:5]", nil), ("[1, 2][2:1]", nil),
            ("[1, 2, 2].size()", .int(3)), ("[1, 2, 3].hasAll([1, 3])", .bool(true)), ("[1, 2].hasAll([1, 4])", .bool(false)),
            ("[1, 2].hasAll([])", .bool(true)), ("[1, 2].hasAny([4, 2])", .bool(true)), ("[1, 2].hasAny([])", .bool(false)),
            ("[1, 2].hasOnly([1, 2, 3])", .bool(true)), ("[1, 4].hasOnly([1, 2])", .bool(false)),
            ("[1, 2].hasAll([1].toSet())", .bool(true)), ("[1].hasAll(1)", nil),
            ("[1].concat([2])", .list([.int(1), .int(2)])), ("[1] + [2]", .list([.int(1), .int(2)])),
            ("['a', 'b'].join('-')", .string("a-b")), ("[1].join('-')", nil),
            ("[1, 2, 1, 3].removeAll([1])", .list([.int(2), .int(3)])), ("[1, 1, 2].toSet().size()", .int(2)),
            ("[1, 1.0].toSet().size()", .int(1)),
        ])
    }

    @Test func sets() {
        Self.check([
            ("[1, 2].toSet().union([2, 3].toSet()) == [1, 2, 3].toSet()", .bool(true)),
            ("[1, 2].toSet().intersection([2, 3].toSet()) == [2].toSet()", .bool(true)),
            ("[1, 2].toSet().difference([2, 3].toSet()) == [1].toSet()", .bool(true)),
            ("[1, 2].toSet().hasAll([1])", .bool(true)), ("[1, 2].toSet().hasAny([3])", .bool(false)),
            ("[1, 2].toSet().hasOnly([1, 2, 3])", .bool(true)), ("[1, 2].toSet().size()", .int(2)),
            ("[1].toSet()[0]", nil), ("[1].toSet().union(1)", nil),
        ])
    }

    @Test func strings() {
        Self.check([
            ("'ab' + 'cd'", .string("abcd")), ("'héllo'.size()", .int(5)), ("'AbC'.lower()", .string("abc")),
            ("'AbC'.upper()", .string("ABC")), ("'  x y \\n'.trim()", .string("x y")),
            ("'a,b,,c'.split(',')", .list([.string("a"), .string("b"), .string(""), .string("c")])),
            ("'a1b22c'.split('[0-9]+')", .list([.string("a"), .string("b"), .string("c")])),
            ("'banana'.replace('a', 'o')", .string("bonono")), ("'a.b'.replace('\\\\.', '-')", .string("a-b")),
            ("'abc'.toUtf8().size()", .int(3)), ("'hello'[1:3]", .string("el")), ("'héllo'[0:2]", .string("hé")),
            ("'abc'[2:9]", nil), ("'abc'[0]", nil),
            ("'user@example.com'.matches('.*@example[.]com')", .bool(true)),
            ("'user@example.com.evil'.matches('.*@example[.]com')", .bool(false)),
            ("'abc'.matches('b')", .bool(false)), ("'abc'.matches('(')", nil), ("'abc'.matches(1)", nil),
            ("'a' < 'b' && 'b' > 'a'", .bool(true)), ("'x'.nosuch()", nil),
        ])
    }

    @Test func timestampsAndDurations() {
        Self.check([
            ("request.time == timestamp.value(1714564800000)", .bool(true)),
            ("request.time.year()", .int(2024)), ("request.time.month()", .int(5)), ("request.time.day()", .int(1)),
            ("request.time.hours()", .int(12)), ("request.time.minutes()", .int(0)), ("request.time.seconds()", .int(0)),
            ("request.time.nanos()", .int(0)), ("request.time.dayOfWeek()", .int(3)), ("request.time.dayOfYear()", .int(122)),
            ("request.time.toMillis()", .int(1_714_564_800_000)),
            ("request.time.date() == timestamp.date(2024, 5, 1)", .bool(true)),
            ("request.time.time() == duration.time(12, 0, 0, 0)", .bool(true)),
            ("timestamp.value(-1).toMillis()", .int(-1)), ("timestamp.value(-1).year()", .int(1969)),
            ("timestamp.date(2024, 2, 30)", nil), ("timestamp.date(2023, 12, 31).dayOfYear()", .int(365)),
            ("timestamp.date(2024, 12, 31).dayOfYear()", .int(366)), ("timestamp.date(2024, 1, 7).dayOfWeek()", .int(7)),
            ("request.time + duration.value(1, 'd') == timestamp.date(2024, 5, 2) + duration.value(12, 'h')", .bool(true)),
            ("request.time - duration.value(1, 'w') < request.time", .bool(true)),
            ("(request.time - timestamp.date(2024, 5, 1)) == duration.value(12, 'h')", .bool(true)),
            ("duration.value(90, 's').seconds()", .int(90)), ("duration.value(1500, 'ms').nanos()", .int(500_000_000)),
            ("duration.value(-1500, 'ms').seconds()", .int(-1)), ("duration.value(-1500, 'ms').nanos()", .int(-500_000_000)),
            ("duration.value(1, 'y')", nil), ("duration.abs(duration.value(-5, 's')) == duration.value(5, 's')", .bool(true)),
            ("duration.time(1, 2, 3, 4).nanos()", .int(4)), ("duration.value(1, 's') + duration.value(1, 's') == duration.value(2, 's')", .bool(true)),
            ("timestamp.date(9999, 12, 31) + duration.value(1, 'd')", nil), ("request.time.year(1)", nil),
        ])
    }

    @Test func mathAndConversions() {
        Self.check([
            ("math.abs(-3)", .int(3)), ("math.abs(-2.5)", .float(2.5)), ("math.ceil(1.2)", .int(2)), ("math.floor(-1.2)", .int(-2)),
            ("math.round(2.5)", .int(3)), ("math.round(-2.5)", .int(-3)), ("math.floor(7)", .int(7)),
            ("math.isInfinite(1.0 / 0)", .bool(true)), ("math.isNaN(0.0 / 0)", .bool(true)), ("math.isNaN(1)", .bool(false)),
            ("math.pow(2, 10)", .float(1024)), ("math.sqrt(16)", .float(4)), ("math.abs('a')", nil),
            ("math.ceil(1.0 / 0)", nil), ("math.nosuch(1)", nil),
            ("int(3.9)", .int(3)), ("int(-3.9)", .int(-3)), ("int('42')", .int(42)), ("int('x')", nil), ("int(1e300)", nil),
            ("float(2)", .float(2)), ("float('2.5')", .float(2.5)), ("string(12)", .string("12")), ("string(true)", .string("true")),
            ("string(null)", .string("null")), ("string(1.5)", .string("1.5")), ("bool('true')", .bool(true)), ("bool('yes')", nil),
            ("path('/a/b') == /a/b", .bool(true)), ("path('a//b')", nil), ("debug(5)", .int(5)),
            ("latlng.value(10, 20).latitude()", .float(10)), ("latlng.value(91, 0)", nil),
            ("latlng.value(0, 0).distance(latlng.value(0, 1)) > 111000", .bool(true)),
            ("latlng.value(0, 0).distance(latlng.value(0, 1)) < 111400", .bool(true)),
            ("hashing.sha256('a')", nil), ("'hi'.toUtf8().toBase64()", .string("aGk=")), ("'hi'.toUtf8().toHexString()", .string("6869")),
        ])
    }

    @Test func pathsAndInterpolation() throws {
        let bindings: [String: RulesValue] = ["database": .string("(default)"), "rest": .path(RulesPath(segments: ["x", "y"]))]
        let cases: [(String, RulesValue?)] = [
            ("/databases/$(database)/documents/users/$(request.auth.uid)",
             .path(RulesPath(segments: ["databases", "(default)", "documents", "users", "alice"]))),
            ("/a/$(rest)/b", .path(RulesPath(segments: ["a", "x", "y", "b"]))),
            ("/a/pre$(1)post", .path(RulesPath(segments: ["a", "pre1post"]))),
            ("/a/$(rest)", .path(RulesPath(segments: ["a", "x", "y"]))),
            ("(/a/b/c)[1]", .string("b")), ("/a/b/c[1:]", .path(RulesPath(segments: ["b", "c"]))),
            ("/a/$([1])", nil), ("/a/$(null)", nil), ("/a/b == /a/b", .bool(true)), ("/a/b == 'a/b'", .bool(false)),
        ]
        for (source, expected) in cases {
            let got = try? evaluate(source, bindings: bindings)
            #expect(got.map { RulesValue.equal($0, expected ?? .null) } ?? (expected == nil), "\(source) → \(got.map(\.description) ?? "error")")
        }
    }

    @Test func requestAndResource() throws {
        let stored = doc("users/alice", ["name": "Alice", "age": 30, "friend": .reference(key("users/bob")),
                                          "at": .timestamp(testTime), "where": .geoPoint(try GeoPoint(latitude: 1, longitude: 2))])
        let auth = RulesAuth(uid: "alice", token: ["email": "a@x.com", "admin": true])
        func ev(_ s: String) -> RulesValue? { try? evaluate(s, auth: auth, resource: stored) }
        #expect(ev("request.auth.uid") == .string("alice"))
        #expect(ev("request.auth.token.email") == .string("a@x.com"))
        #expect(ev("request.auth.token.sub") == .string("alice"))
        #expect(ev("request.auth.token.missing") == nil)
        #expect(ev("request.method") == .string("get"))
        #expect(ev("request.path == /databases/(default)/documents/users/alice") == .bool(true))
        #expect(ev("request.resource") == .null)
        #expect(ev("resource.data.name") == .string("Alice"))
        #expect(ev("resource.id") == .string("alice"))
        #expect(ev("resource.__name__ == /databases/(default)/documents/users/alice") == .bool(true))
        #expect(ev("resource.data.friend == /databases/(default)/documents/users/bob") == .bool(true))
        #expect(ev("resource.data.at == request.time") == .bool(true))
        #expect(ev("resource.data['where'].longitude()") == .float(2))
        #expect(ev("nosuchvar") == nil)
        #expect(try evaluate("request.auth == null", auth: nil) == .bool(true))
        #expect((try? evaluate("request.auth.uid", auth: nil)) == nil)
        #expect(try evaluate("resource == null", resource: nil) == .bool(true))
    }

    /// Timestamps outside 0001 … 9999 can be in stored data or query values (JSON reads any
    /// Int64 seconds): every method and conversion answers or fails the evaluation, never traps.
    @Test func timestampsOutsideTheValidRangeNeverTrap() throws {
        for seconds in [Int64.min, Int64.min + 1, Int64.max, Timestamp.minSeconds - 1, Timestamp.maxSeconds + 1] {
            let t = try Value(json: #"{"$timestamp":{"seconds":\#(seconds),"nanos":999999999}}"#)
            let stored = doc("events/e1", ["t": t])
            for method in ["toMillis()", "year()", "month()", "day()", "hours()", "dayOfWeek()", "dayOfYear()", "date()",
                           "time()", "nanos()", "seconds()"] {
                _ = try? evaluate("resource.data.t.\(method)", resource: stored)
            }
            _ = try? evaluate("string(resource.data.t)", resource: stored)
            _ = try? evaluate("bool(resource.data.t)", resource: stored)
            _ = try? evaluate("resource.data.t + duration.value(1, 's')", resource: stored)
            _ = try? evaluate("resource.data.t - request.time", resource: stored)
            #expect(try evaluate("resource.data.t == resource.data.t", resource: stored) == .bool(true))
        }
        let far = try Value(json: #"{"$timestamp":{"seconds":9223372036854775807,"nanos":0}}"#)
        #expect((try? evaluate("resource.data.t.toMillis()", resource: doc("events/e1", ["t": far]))) == nil,
                "beyond an int's range: an evaluation error (the rule denies)")
    }

    @Test func serverTimestampsReadAsRequestTime() throws {
        let pending = Value.pendingServerTimestamp(localWriteTime: try Timestamp(seconds: 5), previous: nil)
        let stored = doc("users/alice", ["at": pending])
        #expect(try evaluate("resource.data.at == request.time", resource: stored) == .bool(true))
    }
}
