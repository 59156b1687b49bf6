import DocCache
import DocModel

/// How documents, snapshots and changes are printed, for people and as JSON lines.
enum Rendering {
    /// A library error as JSON: `{"code":…,"message":…}`.
    static func error(_ error: DocError) -> JSONLine {
        .object([("code", .string(error.code.name)), ("message", .string(error.message))])
    }

    static func data(_ snapshot: DocumentSnapshot) -> JSONLine {
        guard let data = snapshot.data() else { return .null }
        return .value(.map(data))
    }

    static func version(_ snapshot: DocumentSnapshot) -> JSONLine {
        snapshot.version.map { .int($0.microseconds) } ?? .null
    }

    /// `docctl get --json`.
    static func document(_ snapshot: DocumentSnapshot) -> JSONLine {
        .object([
            ("path", .string(snapshot.path)),
            ("exists", .bool(snapshot.exists)),
            ("deleted", .bool(snapshot.isDeleted)),
            ("version", version(snapshot)),
            ("hasPendingWrites", .bool(snapshot.metadata.hasPendingWrites)),
            ("fromCache", .bool(snapshot.metadata.isFromCache)),
            ("data", data(snapshot)),
        ])
    }

    /// A `listen --json` line. An added or modified document that refers to attachments also
    /// has an `attachments` field after `data` (``ReferencedAttachments/json(for:)``); other
    /// changes have none.
    static func snapshotLine(size: Int, metadata: SnapshotMetadata, changes: [DocumentChange],
                             attachments: ReferencedAttachments = .none) -> JSONLine {
        .object([
            ("type", .string("snapshot")),
            ("fromCache", .bool(metadata.isFromCache)),
            ("hasPendingWrites", .bool(metadata.hasPendingWrites)),
            ("size", .int(Int64(size))),
            ("changes", .array(changes.map { change in
                self.change(change.type.rawValue, of: change.document, oldIndex: change.oldIndex, newIndex: change.newIndex,
                            data: data(change.document), attachments: attachments)
            })),
        ])
    }

    /// One change of a JSON snapshot line: type, path, indexes, pending writes, data and, for
    /// a document that stays and refers to attachments, their states.
    static func change(_ type: String, of document: DocumentSnapshot, oldIndex: Int, newIndex: Int, data: JSONLine,
                       attachments: ReferencedAttachments) -> JSONLine {
        var fields: [(String, JSONLine)] = [
            ("type", .string(type)),
            ("path", .string(document.path)),
            ("oldIndex", .int(Int64(oldIndex))),
            ("newIndex", .int(Int64(newIndex))),
            ("hasPendingWrites", .bool(document.metadata.hasPendingWrites)),
            ("data", data),
        ]
        if type != DocumentChange.Kind.removed.rawValue, let references = attachments.json(for: document) {
            fields.append(("attachments", references))
        }
        return .object(fields)
    }

    /// `[pending] [cache]` markers of the human output.
    static func markers(_ metadata: SnapshotMetadata) -> String {
        var parts: [String] = []
        if metadata.hasPendingWrites { parts.append("pending writes") }
        if metadata.isFromCache { parts.append("from cache") }
        return parts.isEmpty ? "synced" : parts.joined(separator: ", ")
    }

    /// The human form of a document: path, state, data.
    static func humanDocument(_ snapshot: DocumentSnapshot) -> String {
        let state: String
        if snapshot.isDeleted {
            state = "deleted"
        } else if snapshot.exists {
            state = "version \(snapshot.version.map { String($0.microseconds) } ?? "-")"
        } else {
            state = "does not exist"
        }
        var text = "\(snapshot.path)  (\(state); \(markers(snapshot.metadata)))"
        if let data = snapshot.data() { text += "\n  " + Value.map(data).jsonString }
        return text
    }

    /// A human line of a change: `+ rooms/r1 [0]  {…}  *` (`*` = pending write), followed, for
    /// a document that refers to attachments, by a line per attachment
    /// (``ReferencedAttachments/humanLines(for:)``).
    static func humanChange(_ change: DocumentChange, attachments: ReferencedAttachments = .none) -> String {
        let sign: String
        let index: String
        switch change.type {
        case .added: sign = "+"; index = "[\(change.newIndex)]"
        case .modified: sign = "~"; index = change.oldIndex == change.newIndex ? "[\(change.newIndex)]" : "[\(change.oldIndex)→\(change.newIndex)]"
        case .removed: sign = "-"; index = "[\(change.oldIndex)]"
        }
        let pending = change.document.metadata.hasPendingWrites ? "  * pending" : ""
        let data = change.type == .removed ? "" : "  " + (change.document.data().map { Value.map($0).jsonString } ?? "")
        let line = "\(sign) \(change.document.path) \(index)\(data)\(pending)"
        guard change.type != .removed else { return line }
        return ([line] + attachments.humanLines(for: change.document)).joined(separator: "\n")
    }
}
