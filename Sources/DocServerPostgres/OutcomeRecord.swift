internal import DocModel
internal import DocServer

/// The `body` of an outcome row: the same binary `Value` map as the embedded store's outcome
/// records (DocServer's `StoreRecords.swift`, internal there), so both stores hold identical
/// bytes for one outcome.
///
/// | key | value                                                               |
/// |-----|---------------------------------------------------------------------|
/// | `c` `b` `u` `d` `t` | client id, batch id, uid, digest (bit pattern), recorded at |
/// | `v` `r` | committed: version, `[[version, [transform results]]]`           |
/// | `e` | rejected: `{c: code, m: message, l?: location}`                      |
enum OutcomeRecord {
    static func encode(_ outcome: BatchOutcome) -> [UInt8] {
        var m: [String: Value] = [
            "c": .string(outcome.batch.clientID), "b": .integer(Int64(outcome.batch.batchID)), "u": .string(outcome.uid),
            "d": .integer(Int64(bitPattern: outcome.digest)), "t": .integer(outcome.recordedAt),
        ]
        switch outcome.result {
        case .committed(let version, let results):
            m["v"] = .integer(version.microseconds)
            m["r"] = .array(results.map { .array([.integer($0.version.microseconds), .array($0.transformResults)]) })
        case .rejected(let error):
            var e: [String: Value] = ["c": .integer(Int64(error.code.rawValue)), "m": .string(error.message)]
            if let location = error.location { e["l"] = .string(location) }
            m["e"] = .map(e)
        }
        return Value.map(m).binaryEncoded()
    }

    static func decode(_ record: [UInt8]) throws(DocError) -> BatchOutcome {
        let corrupt = DocError(.dataLoss, "corrupt batch outcome record")
        guard case .map(let m) = try Value(binary: record),
              case .string(let client)? = m["c"], case .integer(let batchID)? = m["b"], case .string(let uid)? = m["u"],
              case .integer(let digest)? = m["d"], case .integer(let recordedAt)? = m["t"]
        else { throw corrupt }
        let result: BatchOutcome.Result
        if case .integer(let v)? = m["v"], case .array(let rs)? = m["r"] {
            var results: [MutationResult] = []
            for r in rs {
                guard case .array(let parts) = r, parts.count == 2, case .integer(let rv) = parts[0],
                      case .array(let transforms) = parts[1] else { throw corrupt }
                results.append(MutationResult(version: SnapshotVersion(microseconds: rv), transformResults: transforms))
            }
            result = .committed(version: SnapshotVersion(microseconds: v), results: results)
        } else if case .map(let e)? = m["e"], case .integer(let c)? = e["c"], let code = DocError.Code(rawValue: Int(c)),
                  case .string(let message)? = e["m"] {
            result = .rejected(DocError(code, message, at: e["l"]?.stringValue))
        } else {
            throw corrupt
        }
        return BatchOutcome(batch: BatchKey(clientID: client, batchID: Int(batchID)), uid: uid, digest: UInt64(bitPattern: digest),
                            recordedAt: recordedAt, result: result)
    }
}
