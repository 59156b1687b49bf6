import DocModel
import Testing
@testable import DocCache
import DocTestTraits

/// `setData`'s parser builds the document directly (not field by field); it must give what the
/// general walk (used by `setData(merge: true)`) gives for the same input: the same data and the
/// same transforms, in the same order.
@Suite("Parsing setData", .cpuBound)
struct UserDataParserTests {
    static let key = try! DocumentKey("items/a")

    static let inputs: [[String: FieldValue]] = [
        [:],
        ["n": .value(1), "s": "text"],
        ["m": .map([:])],
        // No sentinel anywhere: converted map by map, keeping each dictionary.
        ["owner": .map(["id": "u1", "address": .map(["city": "Paris", "empty": .map([:])])]), "tags": .value(.array(["a"])),
         "e": .map([:]), "n": .value(.null)],
        // A sentinel deep down: the plain conversion gives up and the walk collects it.
        ["a": .map(["b": .map(["c": .value(1), "t": .serverTimestampSentinel])]), "z": "plain"],
        ["m": .map(["n": .incrementSentinel(1)])],
        ["m": .map(["a": .map(["b": .serverTimestampSentinel])]), "x": .value(.null)],
        ["m": .map(["a": .value(1), "t": .serverTimestampSentinel, "e": .map([:])]), "tags": .arrayUnionSentinel(["a"])],
        ["owner": .map(["id": "u1", "name": "Someone", "address": .map(["city": "Paris", "zip": .value(75001)])]),
         "removed": .arrayRemoveSentinel([1, 2]), "count": .incrementSentinel(.double(0.5))],
    ]

    @Test(arguments: inputs.indices)
    func setGivesTheDataAndTransformsOfTheGeneralWalk(_ index: Int) throws {
        let data = Self.inputs[index]
        let set = try UserDataParser.set(Self.key, data)
        let merge = try UserDataParser.setMerge(Self.key, data)
        guard case .set(let setData) = set.kind, case .patch(let mergeData, _) = merge.kind else {
            Issue.record("unexpected kinds \(set.kind), \(merge.kind)")
            return
        }
        #expect(setData == mergeData)
        #expect(set.fieldTransforms == merge.fieldTransforms)
        #expect(set.precondition == .none)
        try set.validate()
    }

    @Test func aMapOfOnlySentinelsWritesNoFieldAndAnEmptyMapIsKept() throws {
        let m = try UserDataParser.set(Self.key, ["m": .map(["n": .incrementSentinel(1)]), "e": .map([:])])
        #expect(m == .set(Self.key, ObjectValue(["e": .map([:])]), transforms: [.increment(try FieldPath("m.n"), by: 1)]))
    }

    @Test func deleteIsRefusedNamingTheField() {
        #expect {
            _ = try UserDataParser.set(Self.key, ["m": .map(["gone": .deleteSentinel])])
        } throws: { error in
            guard let error = error as? DocError else { return false }
            return error.code == .invalidArgument && error.message.contains("FieldValue.delete()")
                && error.location?.contains("m.gone") == true
        }
    }
}
