import DocModel
@testable import DocProtocol

/// Values, documents, targets and mutations used across the protocol tests.
enum Fixtures {
    static func key(_ path: String) -> DocumentKey { try! DocumentKey(path) }
    static func field(_ path: String) -> FieldPath { try! FieldPath(path) }

    /// A value of every type, including the awkward ones (integral doubles, -0.0, NaN, maps
    /// with a single `$` key, out-of-range timestamps).
    static var everyType: [String: Value] {
        [
            "null": .null, "bool": true, "int": .integer(-42), "intMax": .integer(.max),
            "double": 1.5, "integralDouble": .double(2.0), "negativeZero": .double(-0.0),
            "nan": .double(.nan), "inf": .double(.infinity), "minusInf": .double(-.infinity),
            "timestamp": .timestamp(try! Timestamp(seconds: 1_714_557_600, nanos: 123_456_789)),
            "oldTimestamp": .timestamp(Timestamp(microseconds: -70_000_000_000_000_000)),
            "string": "héllo \"world\"\n", "bytes": .bytes([0, 1, 2, 255]),
            "ref": .reference(key("users/alice")), "geo": .geoPoint(try! GeoPoint(latitude: 59.9, longitude: 10.75)),
            "array": [1, "two", [ "three": 3 ]], "map": ["a": ["b": ["c": true]]],
            "dollarMap": ["$ref": "not a reference"], "dollarTimestamp": ["$timestamp": 5],
            "emptyMap": .map([:]), "emptyArray": .array([]),
        ]
    }

    static var document: Document {
        Document(key: key("rooms/r1/messages/m1"), data: ObjectValue(everyType),
                 version: SnapshotVersion(microseconds: 1_714_557_600_123_456),
                 createTime: SnapshotVersion(microseconds: 1_714_557_000_000_000))
    }

    /// A query target with every part: filters (composite too), orders, limit, cursors.
    static var queryTarget: Target {
        let q = try! Query(collection: "rooms/r1/messages")
            .filter(.or([.where(field("priority"), .greaterThanOrEqual, 3),
                         .and([.where(field("tags"), .arrayContains, "urgent"), .where(field("author"), .in, ["a", "b"])])]))
            .filter(.where(field("`odd.name`.x"), .notEqual, .null))
            .order(by: field("sentAt"), descending: true)
            .limit(to: 50)
            .start(after: [.timestamp(try! Timestamp(seconds: 1_700_000_000))])
            .end(at: [.timestamp(try! Timestamp(seconds: 1_600_000_000))])
            .includingDeleted()
        return try! q.toTarget()
    }

    static var groupTarget: Target {
        try! Query(collectionGroup: "messages").filter(.where(.documentID, .greaterThan, .reference(key("rooms/r1/messages/m5"))))
            .limit(to: 10).toTarget()
    }

    static var documentTarget: Target { try! Query(document: key("users/alice")).toTarget() }

    static var limitToLastTarget: Target {
        try! Query(collection: "scores").order(by: field("points")).limit(toLast: 3).toTarget()
    }

    /// ``everyType`` as a user may write it: without the out-of-range timestamp, which
    /// documents may hold when read but writes may not (``DocumentLimits``).
    static var everyWritableType: [String: Value] {
        everyType.filter { $0.key != "oldTimestamp" }
    }

    static var mutations: [Mutation] {
        [
            .set(key("users/alice"), ObjectValue(everyWritableType), transforms: [.serverTimestamp(field("at"))]),
            .create(key("users/bob"), ObjectValue(["name": "Bob"])),
            .setMerge(key("users/carol"), ObjectValue(["address": ["city": "Oslo"]]),
                      transforms: [.increment(field("visits"), by: 1)]),
            .update(key("users/dave"), fields: [field("age"): 31], deleting: [field("nickname")],
                    transforms: [.arrayUnion(field("tags"), ["x", 1.0]), .arrayRemove(field("old"), [.null])]),
            .delete(key("users/erin"), precondition: .updateTime(SnapshotVersion(microseconds: 99))),
            .tombstone(key("users/frank"), transforms: [.increment(field("deletions"), by: 0.5)]),
            .verify(key("users/gina"), .exists(true)),
        ]
    }
}
