import Foundation
import Testing
@testable import DocCache
import DocModel
import DocTestSupport
import DocTestTraits

@Suite("Spec tests: decoding", .cpuBound)
struct SpecTestsDecodingTests {
    private func json(_ text: String) throws -> SpecJSON {
        SpecJSON(try Value(json: text))
    }

    private func step(_ text: String) throws -> SpecStep {
        try SpecDecoder.decodeStep(json(text))
    }

    @Test func decodesACollectionQueryWithFiltersOrderAndLimit() throws {
        let spec = try SpecDecoder.decodeQuery(json("""
            {"path": "collection", "filters": [["v", ">=", 2], ["tags", "array-contains", "a"]],
             "orderBys": [["v", "desc"]], "limit": 3, "limitType": "LimitToLast"}
            """))
        let expected = try Query(collection: "collection")
            .filter("v", .greaterThanOrEqual, 2).filter("tags", .arrayContains, "a")
            .order(by: "v", descending: true).limit(toLast: 3)
        #expect(spec.query == expected)
        #expect(spec.query.limitType == .last)
    }

    @Test func decodesDocumentAndCollectionGroupQueries() throws {
        let document = try SpecDecoder.decodeQuery(json(#"{"path": "collection/a", "filters": [], "orderBys": []}"#))
        #expect(document.query.isDocumentQuery)
        #expect(document.query == Query(document: try DocumentKey("collection/a")))

        let group = try SpecDecoder.decodeQuery(json(#"{"path": "", "collectionGroup": "cg", "filters": [["val", "==", 1]], "orderBys": []}"#))
        #expect(group.query == (try Query(collectionGroup: "cg").filter("val", .equal, 1)))

        let plain = try SpecDecoder.decodeQuery(json(#""collection""#))
        #expect(plain.query == (try Query(collection: "collection")))
    }

    @Test func limitToFirstIsTheDefault() throws {
        let spec = try SpecDecoder.decodeQuery(json(#"{"path": "c", "filters": [], "orderBys": [], "limit": 2}"#))
        #expect(spec.query == (try Query(collection: "c").limit(to: 2)))
    }

    @Test func rejectsUnknownQueryMembersAndOperators() throws {
        #expect(throws: SpecDecodingError.self) { try SpecDecoder.decodeQuery(json(#"{"path": "c", "startAt": 1}"#)) }
        #expect(throws: SpecDecodingError.self) {
            try SpecDecoder.decodeQuery(json(#"{"path": "c", "filters": [["a", "~", 1]]}"#))
        }
        #expect(throws: SpecDecodingError.self) {
            try SpecDecoder.decodeQuery(json(#"{"path": "c", "limit": 1, "limitType": "Sideways"}"#))
        }
    }

    @Test func decodesDocuments() throws {
        let doc = try SpecDecoder.document(json("""
            {"createTime": 0, "key": "collection/a", "options": {"hasCommittedMutations": false, "hasLocalMutations": true},
             "value": {"v": 1, "s": "x", "d": 1.5, "m": {"n": null}}, "version": 1000}
            """))
        #expect(doc.key == (try DocumentKey("collection/a")))
        #expect(doc.version == SnapshotVersion(microseconds: 1000))
        #expect(doc.hasLocalMutations && !doc.hasCommittedMutations)
        #expect(doc.value == ObjectValue(["v": .integer(1), "s": "x", "d": .double(1.5), "m": .map(["n": .null])]))

        let deleted = try SpecDecoder.document(json(#"{"key": "collection/b", "value": null, "version": 2000}"#))
        #expect(deleted.value == nil)
        #expect(deleted.version == SnapshotVersion(microseconds: 2000))
    }

    @Test func decodesUserWrites() throws {
        guard case .userSet(let key, let value) = try step(#"{"userSet": ["collection/a", {"v": 1}]}"#).action else {
            Issue.record("not a userSet")
            return
        }
        #expect(key == (try DocumentKey("collection/a")))
        #expect(value == ObjectValue(["v": 1]))

        guard case .userPatch(_, let fields) = try step(#"{"userPatch": ["collection/a", {"a.c": "<DELETE>", "v": 2}]}"#).action else {
            Issue.record("not a userPatch")
            return
        }
        #expect(fields.count == 2)
        #expect(fields[0].0 == (try FieldPath("a.c")) && fields[0].1 == nil)
        #expect(fields[1].0 == (try FieldPath("v")) && fields[1].1 == .integer(2))

        guard case .userDelete(let deleted) = try step(#"{"userDelete": "collection/a"}"#).action else {
            Issue.record("not a userDelete")
            return
        }
        #expect(deleted == (try DocumentKey("collection/a")))
    }

    @Test func decodesWatchSteps() throws {
        guard case .watchCurrent(let ids, let token) = try step(#"{"watchCurrent": [[2, 4], "resume-token-1000"]}"#).action else {
            Issue.record("not a watchCurrent")
            return
        }
        #expect(ids == [2, 4] && token == Array("resume-token-1000".utf8))

        guard case .watchRemove(let removed, let cause) = try step(#"{"watchRemove": {"cause": {"code": 8}, "targetIds": [2]}}"#).action
        else {
            Issue.record("not a watchRemove")
            return
        }
        #expect(removed == [2] && cause?.code == .resourceExhausted)

        guard case .watchEntity(let docs, let targets, let removedTargets) = try step("""
            {"watchEntity": {"docs": [{"key": "c/a", "value": {"v": 1}, "version": 5}], "targets": [2], "removedTargets": [4]}}
            """).action
        else {
            Issue.record("not a watchEntity")
            return
        }
        #expect(docs.map(\.key) == [try DocumentKey("c/a")] && targets == [2] && removedTargets == [4])

        guard case .watchRemoveKey(let key, let from) = try step(#"{"watchEntity": {"key": "c/a", "removedTargets": [2]}}"#).action else {
            Issue.record("not a key removal")
            return
        }
        #expect(key == (try DocumentKey("c/a")) && from == [2])

        guard case .watchSnapshot(let version, let targetIDs, let resumeToken) =
            try step(#"{"watchSnapshot": {"targetIds": [], "version": 1001, "resumeToken": "t"}}"#).action
        else {
            Issue.record("not a watchSnapshot")
            return
        }
        #expect(version == SnapshotVersion(microseconds: 1001) && targetIDs.isEmpty && resumeToken == Array("t".utf8))

        guard case .watchStreamClose(let error, let runBackoff) = try step("""
            {"watchStreamClose": {"error": {"code": 14, "message": "Simulated Backend Error"}, "runBackoffTimer": true}}
            """).action
        else {
            Issue.record("not a watchStreamClose")
            return
        }
        #expect(error.code == .unavailable && error.message == "Simulated Backend Error" && runBackoff)
    }

    @Test func decodesWriteAndControlSteps() throws {
        guard case .failWrite(let error, let keep) = try step(#"{"failWrite": {"error": {"code": 9}, "keepInQueue": true}}"#).action else {
            Issue.record("not a failWrite")
            return
        }
        #expect(error.code == .failedPrecondition && keep)
        guard case .changeUser(nil) = try step(#"{"changeUser": null}"#).action else {
            Issue.record("changeUser null is the unauthenticated user")
            return
        }
        guard case .enableNetwork(false) = try step(#"{"enableNetwork": false}"#).action else {
            Issue.record("not enableNetwork(false)")
            return
        }
        guard case .unsupported("applyClientState") = try step(#"{"applyClientState": {"visibility": "visible"}}"#).action else {
            Issue.record("applyClientState is unsupported")
            return
        }
        #expect(throws: SpecDecodingError.self) { try step(#"{"teleport": true}"#) }
        #expect(throws: SpecDecodingError.self) { try step(#"{"restart": true, "drainQueue": true}"#) }
    }

    @Test func decodesExpectations() throws {
        let decoded = try step("""
            {"watchSnapshot": {"targetIds": [], "version": 1000},
             "expectedSnapshotEvents": [{"query": {"path": "c", "filters": [], "orderBys": []}, "errorCode": 0,
               "fromCache": true, "hasPendingWrites": false,
               "added": [{"key": "c/a", "value": {"v": 1}, "version": 1000, "options": {}}],
               "metadata": [{"key": "c/b", "value": {"v": 2}, "version": 0, "options": {"hasLocalMutations": true}}]}],
             "expectedState": {"activeTargets": {"2": {"queries": [{"path": "c", "filters": [], "orderBys": []}], "resumeToken": "r"},
                                                 "1": {"queries": [{"path": "c/x", "filters": [], "orderBys": []}], "resumeToken": "",
                                                       "targetPurpose": "TargetPurposeLimboResolution"}},
                               "activeLimboDocs": ["c/x"], "enqueuedLimboDocs": [], "numOutstandingWrites": 1,
                               "userCallbacks": {"acknowledgedDocs": ["c/a"], "rejectedDocs": []}, "isPrimary": true},
             "expectedSnapshotsInSyncEvents": 1}
            """)
        let events = try #require(decoded.expectedSnapshotEvents)
        #expect(events.count == 1)
        #expect(events[0].added.map(\.key) == [try DocumentKey("c/a")])
        #expect(events[0].metadata.first?.hasLocalMutations == true)
        #expect(events[0].fromCache && !events[0].hasPendingWrites && events[0].errorCode == 0)
        let state = try #require(decoded.expectedState)
        #expect(state.activeTargets?[2]?.resumeToken == Array("r".utf8))
        #expect(state.activeTargets?[1]?.purpose == .limboResolution)
        #expect(state.activeLimboDocs == [try DocumentKey("c/x")])
        #expect(state.enqueuedLimboDocs == [])
        #expect(state.numOutstandingWrites == 1)
        #expect(state.userCallbacks?.acknowledgedDocs == ["c/a"])
        #expect(state.multiClientKeys == ["isPrimary"])
        #expect(decoded.expectedSnapshotsInSyncEvents == 1)
        #expect(decoded.expectedWaitForPendingWritesEvents == 0)
    }

    /// Every step and expectation of the spec files in the spec directory decodes.
    @Test(.enabled(if: ExternalSuite.specTests.isEnabled))
    func decodesEverySpecFile() throws {
        let directory = URL(fileURLWithPath: try ExternalSuite.specTests.folder().path)
        let files = try SpecPaths.specFiles(in: directory)
        #expect(!files.isEmpty, "no *_spec_test.json in \(directory.path)")
        for url in files {
            let bytes = Array(try Data(contentsOf: url))
            let file = try SpecDecoder.decodeFile(name: url.lastPathComponent, bytes: bytes)
            #expect(!file.tests.isEmpty)
            for test in file.tests {
                if case .failure(let error) = test.steps {
                    Issue.record("\(file.name) :: \(test.name): \(error)")
                }
            }
        }
    }
}
