@testable import DocCache
import DocModel

/// Decodes spec files into ``SpecFile``s.
enum SpecDecoder {
    /// The step members that are expectations or step metadata, not actions.
    static let nonActionKeys: Set<String> = [
        "expectedSnapshotEvents", "expectedState", "expectedSnapshotsInSyncEvents",
        "expectedWaitForPendingWritesEvents", "clientIndex",
    ]

    /// Step kinds of the web SDK's multi-tab mode and other features the single-client driver
    /// does not run.
    static let unsupportedActions: Set<String> = [
        "applyClientState", "shutdown", "clearPersistence", "triggerLruGC", "watchProto",
    ]

    /// Decodes a whole file. Only the outer structure must be valid; a test whose steps do
    /// not decode carries the error in ``SpecTest/steps``.
    static func decodeFile(name: String, bytes: [UInt8]) throws(SpecDecodingError) -> SpecFile {
        let root: Value
        do {
            root = try Value(jsonBytes: bytes)
        } catch {
            throw SpecDecodingError(message: "not valid JSON: \(error)", path: name)
        }
        let json = SpecJSON(root)
        var tests: [SpecTest] = []
        for (testName, test) in try json.object().sorted(by: { $0.key < $1.key }) {
            tests.append(try decodeTest(name: testName, test))
        }
        return SpecFile(name: name, tests: tests)
    }

    static func decodeTest(name: String, _ json: SpecJSON) throws(SpecDecodingError) -> SpecTest {
        let describeName = try json["describeName"]?.string() ?? ""
        let tags = try (json["tags"]?.array() ?? []).map { element throws(SpecDecodingError) in try element.string() }
        let comment = try json["comment"]?.string()
        let config = try decodeConfig(json["config"])
        let steps: Result<[SpecStep], SpecDecodingError>
        do {
            steps = .success(try json.required("steps").array().map { step throws(SpecDecodingError) in try decodeStep(step) })
        } catch {
            steps = .failure(error)
        }
        return SpecTest(
            name: name, describeName: describeName, tags: tags, comment: comment, config: config, steps: steps)
    }

    static func decodeConfig(_ json: SpecJSON?) throws(SpecDecodingError) -> SpecConfig {
        var config = SpecConfig()
        guard let json, !json.isNull else { return config }
        for (key, value) in try json.object() {
            switch key {
            case "useEagerGCForMemory": config.useEagerGCForMemory = try value.truthy()
            case "numClients": config.numClients = Int(try value.int())
            case "maxConcurrentLimboResolutions": config.maxConcurrentLimboResolutions = Int(try value.int())
            default: throw value.fail("unknown config member")
            }
        }
        return config
    }

    // MARK: - Steps

    static func decodeStep(_ json: SpecJSON) throws(SpecDecodingError) -> SpecStep {
        let members = try json.object()
        let actionKeys = members.keys.filter { !nonActionKeys.contains($0) }.sorted()
        guard actionKeys.count == 1, let kind = actionKeys.first, let body = members[kind] else {
            throw json.fail("a step needs exactly one action, found \(actionKeys)")
        }
        var text = json.text
        if text.count > 300 { text = String(text.prefix(300)) + "…" }
        var step = SpecStep(action: try decodeAction(kind, body), json: text)
        if let index = members["clientIndex"] { step.clientIndex = Int(try index.int()) }
        if let events = members["expectedSnapshotEvents"] {
            step.expectedSnapshotEvents = try events.array().map { event throws(SpecDecodingError) in try decodeEvent(event) }
        }
        if let state = members["expectedState"] { step.expectedState = try decodeExpectedState(state) }
        if let count = members["expectedSnapshotsInSyncEvents"] { step.expectedSnapshotsInSyncEvents = Int(try count.int()) }
        if let count = members["expectedWaitForPendingWritesEvents"] {
            step.expectedWaitForPendingWritesEvents = Int(try count.int())
        }
        return step
    }

    static func decodeAction(_ kind: String, _ body: SpecJSON) throws(SpecDecodingError) -> SpecAction {
        switch kind {
        case "userListen":
            let options = body["options"]
            let source = try options?["source"]?.string()
            return .userListen(
                query: try decodeQuery(body.required("query")), targetID: try targetID(body.required("targetId")),
                cacheOnly: source == "cache")
        case "userUnlisten":
            let parts = try body.array()
            guard parts.count == 2 else { throw body.fail("expected [targetId, query]") }
            return .userUnlisten(targetID: try targetID(parts[0]), query: try decodeQuery(parts[1]))
        case "userSet":
            let parts = try body.array()
            guard parts.count == 2 else { throw body.fail("expected [key, value]") }
            return .userSet(try key(parts[0]), try objectValue(parts[1]))
        case "userPatch":
            let parts = try body.array()
            guard parts.count == 2 else { throw body.fail("expected [key, value]") }
            var fields: [(FieldPath, Value?)] = []
            for (name, value) in try parts[1].object().sorted(by: { $0.key < $1.key }) {
                let path: FieldPath
                do { path = try FieldPath(name) } catch { throw value.fail("invalid field path: \(error)") }
                if case .string(deleteSentinel) = value.value {
                    fields.append((path, nil))
                } else {
                    fields.append((path, value.value))
                }
            }
            return .userPatch(try key(parts[0]), fields)
        case "userDelete":
            return .userDelete(try key(body))
        case "watchAck":
            return .watchAck(try targetIDs(body))
        case "watchCurrent":
            let parts = try body.array()
            guard parts.count == 2 else { throw body.fail("expected [targetIds, resumeToken]") }
            return .watchCurrent(try targetIDs(parts[0]), resumeToken: try resumeToken(parts[1]))
        case "watchRemove":
            let cause = try body["cause"].map { json throws(SpecDecodingError) in try error(json) }
            return .watchRemove(try targetIDs(body.required("targetIds")), cause: cause)
        case "watchEntity":
            let targets = try body["targets"].map { json throws(SpecDecodingError) in try targetIDs(json) } ?? []
            let removed = try body["removedTargets"].map { json throws(SpecDecodingError) in try targetIDs(json) } ?? []
            if let docs = body["docs"] {
                return .watchEntity(
                    docs: try docs.array().map { doc throws(SpecDecodingError) in try document(doc) },
                    targets: targets, removedTargets: removed)
            }
            if let doc = body["doc"] {
                return .watchEntity(docs: [try document(doc)], targets: targets, removedTargets: removed)
            }
            if let key = body["key"] {
                return .watchRemoveKey(try self.key(key), removedTargets: removed)
            }
            throw body.fail("watchEntity needs docs, doc or key")
        case "watchFilter":
            let keys = try (body["keys"]?.array() ?? []).map { json throws(SpecDecodingError) in try key(json) }
            let bloomFilter = try body["bloomFilter"].flatMap { json throws(SpecDecodingError) in
                json.isNull ? nil : try self.bloomFilter(json)
            }
            return .watchFilter(targetIDs: try targetIDs(body.required("targetIds")), keys: keys, bloomFilter: bloomFilter)
        case "watchReset":
            return .watchReset(try targetIDs(body))
        case "watchSnapshot":
            let ids = try body["targetIds"].map { json throws(SpecDecodingError) in try targetIDs(json) } ?? []
            let token = try body["resumeToken"].map { json throws(SpecDecodingError) in try resumeToken(json) } ?? []
            return .watchSnapshot(version: try version(body.required("version")), targetIDs: ids, resumeToken: token)
        case "watchStreamClose":
            return .watchStreamClose(
                error: try error(body.required("error")), runBackoffTimer: try body["runBackoffTimer"]?.truthy() ?? false)
        case "writeAck":
            return .writeAck(
                version: try version(body.required("version")), keepInQueue: try body["keepInQueue"]?.truthy() ?? false)
        case "failWrite":
            return .failWrite(
                error: try error(body.required("error")), keepInQueue: try body["keepInQueue"]?.truthy() ?? false)
        case "enableNetwork":
            return .enableNetwork(try body.truthy())
        case "restart":
            return .restart
        case "changeUser":
            return .changeUser(body.isNull ? nil : try body.string())
        case "runTimer":
            return .runTimer(try body.string())
        case "waitForPendingWrites":
            return .waitForPendingWrites
        case "addSnapshotsInSyncListener":
            return .addSnapshotsInSyncListener
        case "removeSnapshotsInSyncListener":
            return .removeSnapshotsInSyncListener
        case "drainQueue":
            return .drainQueue
        case "loadBundle":
            return .loadBundle(Array(try body.string().utf8))
        case _ where unsupportedActions.contains(kind):
            return .unsupported(kind)
        default:
            throw body.fail("unknown step kind \"\(kind)\"")
        }
    }

    // MARK: - Expectations

    static func decodeEvent(_ json: SpecJSON) throws(SpecDecodingError) -> SpecEvent {
        var event = SpecEvent(query: try decodeQuery(json.required("query")))
        for (key, value) in try json.object() {
            switch key {
            case "query": break
            case "added": event.added = try documents(value)
            case "modified": event.modified = try documents(value)
            case "removed": event.removed = try documents(value)
            case "metadata": event.metadata = try documents(value)
            case "fromCache": event.fromCache = try value.truthy()
            case "hasPendingWrites": event.hasPendingWrites = try value.truthy()
            case "errorCode": event.errorCode = Int(try value.int())
            default: throw value.fail("unknown snapshot event member")
            }
        }
        return event
    }

    static func decodeExpectedState(_ json: SpecJSON) throws(SpecDecodingError) -> SpecExpectedState {
        var state = SpecExpectedState()
        for (key, value) in try json.object() {
            switch key {
            case "numOutstandingWrites": state.numOutstandingWrites = Int(try value.int())
            case "writeStreamRequestCount": state.writeStreamRequestCount = Int(try value.int())
            case "watchStreamRequestCount": state.watchStreamRequestCount = Int(try value.int())
            case "activeLimboDocs": state.activeLimboDocs = try keys(value)
            case "enqueuedLimboDocs": state.enqueuedLimboDocs = try keys(value)
            case "activeTargets":
                var targets: [TargetID: SpecTarget] = [:]
                for (id, target) in try value.object() {
                    guard let targetID = TargetID(id) else { throw target.fail("target id \"\(id)\" is not a number") }
                    targets[targetID] = try decodeTarget(target)
                }
                state.activeTargets = targets
            case "userCallbacks":
                let acknowledged = try (value["acknowledgedDocs"]?.array() ?? []).map { json throws(SpecDecodingError) in try json.string() }
                let rejected = try (value["rejectedDocs"]?.array() ?? []).map { json throws(SpecDecodingError) in try json.string() }
                state.userCallbacks = (acknowledged, rejected)
            case "isPrimary", "numActiveClients", "isShutdown":
                state.multiClientKeys.append(key)
            default:
                throw value.fail("unknown expected state member")
            }
        }
        state.multiClientKeys.sort()
        return state
    }

    static func decodeTarget(_ json: SpecJSON) throws(SpecDecodingError) -> SpecTarget {
        var target = SpecTarget(queries: [], purpose: .listen)
        for (key, value) in try json.object() {
            switch key {
            case "queries": target.queries = try value.array().map { json throws(SpecDecodingError) in try decodeQuery(json) }
            case "resumeToken": target.resumeToken = try resumeToken(value)
            case "readTime": target.readTime = try version(value)
            case "expectedCount": target.expectedCount = Int(try value.int())
            case "targetPurpose": target.purpose = try purpose(value)
            default: throw value.fail("unknown active target member")
            }
        }
        guard !target.queries.isEmpty else { throw json.fail("an active target needs at least one query") }
        return target
    }

    static func purpose(_ json: SpecJSON) throws(SpecDecodingError) -> QueryPurpose {
        switch try json.string() {
        case "TargetPurposeListen": return .listen
        case "TargetPurposeExistenceFilterMismatch": return .existenceFilterMismatch
        case "TargetPurposeExistenceFilterMismatchBloom": return .existenceFilterMismatchBloom
        case "TargetPurposeLimboResolution": return .limboResolution
        case let other: throw json.fail("unknown target purpose \"\(other)\"")
        }
    }

    // MARK: - Queries

    static func decodeQuery(_ json: SpecJSON) throws(SpecDecodingError) -> SpecQuery {
        if case .string(let path) = json.value {
            return SpecQuery(query: try baseQuery(path: path, collectionGroup: nil, json), json: json.text)
        }
        var path = ""
        var collectionGroup: String?
        var filters: [SpecJSON] = []
        var orderBys: [SpecJSON] = []
        var limit: Int?
        var limitType = "LimitToFirst"
        for (key, value) in try json.object() {
            switch key {
            case "path": path = try value.string()
            case "collectionGroup": collectionGroup = value.isNull ? nil : try value.string()
            case "filters": filters = try value.array()
            case "orderBys": orderBys = try value.array()
            case "limit": limit = value.isNull ? nil : Int(try value.int())
            case "limitType": limitType = try value.string()
            default: throw value.fail("unknown query member")
            }
        }
        var query = try baseQuery(path: path, collectionGroup: collectionGroup, json)
        do {
            for filter in filters {
                let parts = try filter.array()
                guard parts.count == 3 else { throw filter.fail("expected [field, op, value]") }
                let opName = try parts[1].string()
                guard let op = FieldFilter.Operator(rawValue: opName) else { throw parts[1].fail("unknown operator \"\(opName)\"") }
                query = try query.filter(FieldPath(try parts[0].string()), op, parts[2].value)
            }
            for orderBy in orderBys {
                let parts = try orderBy.array()
                guard parts.count == 2 else { throw orderBy.fail("expected [field, direction]") }
                let direction = try parts[1].string()
                guard direction == "asc" || direction == "desc" else { throw parts[1].fail("unknown direction \"\(direction)\"") }
                query = try query.order(by: FieldPath(try parts[0].string()), descending: direction == "desc")
            }
            if let limit {
                switch limitType {
                case "LimitToFirst": query = try query.limit(to: limit)
                case "LimitToLast": query = try query.limit(toLast: limit)
                default: throw json.fail("unknown limitType \"\(limitType)\"")
                }
            }
        } catch let error as SpecDecodingError {
            throw error
        } catch {
            throw json.fail("invalid query: \(error)")
        }
        return SpecQuery(query: query, json: json.text)
    }

    private static func baseQuery(path: String, collectionGroup: String?, _ json: SpecJSON) throws(SpecDecodingError) -> Query {
        do {
            let resourcePath = try ResourcePath(path)
            if let collectionGroup {
                return try Query(collectionGroup: collectionGroup, parent: resourcePath)
            }
            if resourcePath.count % 2 == 0 {
                return Query(document: try DocumentKey(path: resourcePath))
            }
            return try Query(collection: resourcePath)
        } catch {
            throw json.fail("invalid query path: \(error)")
        }
    }

    // MARK: - Values

    /// The value `userPatch` uses to delete a field.
    static let deleteSentinel = "<DELETE>"

    static func key(_ json: SpecJSON) throws(SpecDecodingError) -> DocumentKey {
        do { return try DocumentKey(try json.string()) } catch let error as SpecDecodingError { throw error } catch {
            throw json.fail("invalid document key: \(error)")
        }
    }

    static func keys(_ json: SpecJSON) throws(SpecDecodingError) -> [DocumentKey] {
        try json.array().map { json throws(SpecDecodingError) in try key(json) }
    }

    static func objectValue(_ json: SpecJSON) throws(SpecDecodingError) -> ObjectValue {
        guard case .map(let fields) = json.value else { throw json.fail("expected an object value, found \(json.value.typeName)") }
        return ObjectValue(fields)
    }

    static func targetID(_ json: SpecJSON) throws(SpecDecodingError) -> TargetID {
        let id = try json.int()
        guard let targetID = TargetID(exactly: id) else { throw json.fail("target id \(id) out of range") }
        return targetID
    }

    static func targetIDs(_ json: SpecJSON) throws(SpecDecodingError) -> [TargetID] {
        try json.array().map { json throws(SpecDecodingError) in try targetID(json) }
    }

    /// Versions are integers, taken as microseconds.
    static func version(_ json: SpecJSON) throws(SpecDecodingError) -> SnapshotVersion {
        SnapshotVersion(microseconds: try json.int())
    }

    /// Resume tokens are strings, sent as their UTF-8 bytes.
    static func resumeToken(_ json: SpecJSON) throws(SpecDecodingError) -> ResumeToken {
        Array(try json.string().utf8)
    }

    /// `{"code": N, "message"?: …}` with a numeric gRPC code.
    static func error(_ json: SpecJSON) throws(SpecDecodingError) -> DocError {
        let code = try json.required("code").int()
        guard let docCode = DocError.Code(rawValue: Int(code)) else { throw json.fail("unknown error code \(code)") }
        let message = try json["message"]?.string() ?? "simulated error \(code)"
        return DocError(docCode, message)
    }

    static func document(_ json: SpecJSON) throws(SpecDecodingError) -> SpecDocument {
        let key = try self.key(json.required("key"))
        let version = try json["version"].map { json throws(SpecDecodingError) in try self.version(json) } ?? .none
        let createTime = try json["createTime"].map { json throws(SpecDecodingError) in try self.version(json) } ?? .none
        let valueJSON = try json.required("value")
        let value = valueJSON.isNull ? nil : try objectValue(valueJSON)
        let options = json["options"]
        return SpecDocument(
            key: key, version: version, createTime: createTime, value: value,
            hasLocalMutations: try options?["hasLocalMutations"]?.truthy() ?? false,
            hasCommittedMutations: try options?["hasCommittedMutations"]?.truthy() ?? false)
    }

    /// `{"bits": {"bitmap": base64, "padding"?: N}, "hashCount"?: N}`, absent numbers being 0
    /// (proto3 JSON); the parameters are passed on unchecked, as the server sent them. A
    /// bitmap that is not base64 (a web-only test) is a filter the client cannot read: `nil`,
    /// which the aggregator handles as Firestore's web client handles an unreadable filter (a
    /// full re-query).
    static func bloomFilter(_ json: SpecJSON) throws(SpecDecodingError) -> WatchChange.BloomFilterParameters? {
        for key in try json.object().keys where key != "bits" && key != "hashCount" {
            throw json.fail("unknown bloom filter member \"\(key)\"")
        }
        let bits = try json.required("bits")
        for key in try bits.object().keys where key != "bitmap" && key != "padding" {
            throw bits.fail("unknown bloom filter bits member \"\(key)\"")
        }
        let text = try bits["bitmap"]?.string() ?? ""
        guard let bitmap = try? Base64.decode(text).get() else { return nil }
        return WatchChange.BloomFilterParameters(
            bitmap: bitmap, padding: Int(try bits["padding"]?.int() ?? 0), hashCount: Int(try json["hashCount"]?.int() ?? 0))
    }

    static func documents(_ json: SpecJSON) throws(SpecDecodingError) -> [SpecDocument] {
        try json.array().map { json throws(SpecDecodingError) in try document(json) }
    }
}
