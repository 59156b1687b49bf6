package import DocModel

// The values of the store's small records: DocModel `Value` maps in the binary encoding.
// Both stores use them (the PostgreSQL store keeps an outcome's record in a `bytea` column),
// hence `package`.

extension TenantState {
    /// `v` last version, `i` incarnation, `f` change log floor; after a restore also `pi` and
    /// `pv`, the previous incarnation and the version it is valid through (records without
    /// them, written before restores existed, read as "never restored"; older code ignores
    /// them).
    var record: [UInt8] {
        var m: [String: Value] = [
            "v": .integer(lastVersion.microseconds),
            "i": .integer(Int64(bitPattern: incarnation)),
            "f": .integer(changeLogFloor.microseconds),
        ]
        if let previousIncarnation {
            m["pi"] = .integer(Int64(bitPattern: previousIncarnation.incarnation))
            m["pv"] = .integer(previousIncarnation.validThrough.microseconds)
        }
        return Value.map(m).binaryEncoded()
    }

    init(record: [UInt8]) throws(DocError) {
        guard case .map(let m) = try Value(binary: record),
              case .integer(let v)? = m["v"], case .integer(let i)? = m["i"], case .integer(let f)? = m["f"]
        else { throw DocError(.dataLoss, "corrupt tenant state record") }
        // Commits count on from the last version (and tokens encode it unsigned): a record from
        // a damaged store or a crafted backup must not make the next commit overflow.
        guard v >= 0, v < Int64.max else { throw DocError(.dataLoss, "corrupt tenant state record: last version \(v)") }
        var previous: PreviousIncarnation?
        switch (m["pi"], m["pv"]) {
        case (nil, nil):
            previous = nil
        case (.integer(let pi)?, .integer(let pv)?):
            previous = PreviousIncarnation(incarnation: UInt64(bitPattern: pi), validThrough: SnapshotVersion(microseconds: pv))
        default:
            throw DocError(.dataLoss, "corrupt tenant state record (previous incarnation)")
        }
        self.init(lastVersion: SnapshotVersion(microseconds: v), incarnation: UInt64(bitPattern: i),
                  changeLogFloor: SnapshotVersion(microseconds: f), previousIncarnation: previous)
    }
}

extension BatchOutcome {
    package var record: [UInt8] {
        var m: [String: Value] = [
            "c": .string(batch.clientID), "b": .integer(Int64(batch.batchID)), "u": .string(uid),
            "d": .integer(Int64(bitPattern: digest)), "t": .integer(recordedAt),
        ]
        switch result {
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

    package init(record: [UInt8]) throws(DocError) {
        let corrupt = DocError(.dataLoss, "corrupt batch outcome record")
        guard case .map(let m) = try Value(binary: record),
              case .string(let client)? = m["c"], case .integer(let batchID)? = m["b"], case .string(let uid)? = m["u"],
              case .integer(let digest)? = m["d"], case .integer(let recordedAt)? = m["t"]
        else { throw corrupt }
        let result: Result
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
        self.init(batch: BatchKey(clientID: client, batchID: Int(batchID)), uid: uid, digest: UInt64(bitPattern: digest),
                  recordedAt: recordedAt, result: result)
    }
}
