@testable import DocCache
import DocModel

/// A snapshot event (or error) one query listener raised, in the form the comparison needs.
struct SpecActualEvent: CustomStringConvertible {
    enum Kind: String {
        case added, modified, removed, metadata
    }

    var query: Query
    /// The document changes, in the order the snapshot lists them.
    var changes: [(kind: Kind, document: SpecDocument)] = []
    var fromCache = false
    var hasPendingWrites = false
    var error: DocError?

    init(query: Query, changes: [(kind: Kind, document: SpecDocument)], fromCache: Bool, hasPendingWrites: Bool) {
        self.query = query
        self.changes = changes
        self.fromCache = fromCache
        self.hasPendingWrites = hasPendingWrites
    }

    init(query: Query, error: DocError) {
        self.query = query
        self.error = error
    }

    var description: String {
        if let error { return "\(query.canonicalID): error \(error.code.rawValue) (\(error.code))" }
        var parts: [String] = []
        for kind in [Kind.removed, .added, .modified, .metadata] {
            let docs = changes.filter { $0.kind == kind }.map(\.document.description)
            if !docs.isEmpty { parts.append("\(kind.rawValue): [" + docs.joined(separator: "; ") + "]") }
        }
        parts.append("fromCache: \(fromCache)")
        parts.append("hasPendingWrites: \(hasPendingWrites)")
        return "\(query.canonicalID): " + parts.joined(separator: ", ")
    }
}

extension SpecDocument {
    /// The spec form of a document the engine reported.
    init(_ document: Document) {
        self.init(
            key: document.key, version: document.version, createTime: document.createTime, value: document.data,
            hasLocalMutations: document.hasLocalMutations, hasCommittedMutations: document.hasCommittedMutations)
    }

    /// Firestore's document state: local mutations win over committed ones.
    var state: String {
        hasLocalMutations ? "local" : (hasCommittedMutations ? "committed" : "synced")
    }

    /// Whether `actual` is this expected document, as the Firestore runners compare documents:
    /// key, version, contents (structural: integer `1` is not double `1.0`) and state. The
    /// create time is compared only when the file gives one (the generator writes 0).
    func matches(_ actual: SpecDocument) -> Bool {
        key == actual.key && version == actual.version && value == actual.value && state == actual.state
            && (createTime == .none || createTime == actual.createTime)
    }
}

extension SpecEvent {
    /// The expected changes, in the runners' order (removed, added, modified, metadata).
    var changes: [(kind: SpecActualEvent.Kind, document: SpecDocument)] {
        removed.map { (.removed, $0) } + added.map { (.added, $0) } + modified.map { (.modified, $0) }
            + metadata.map { (.metadata, $0) }
    }
}

/// Compares snapshot events the way Firestore's spec runners do.
enum SpecComparison {
    /// The mismatches between the events a step expects and those raised; empty when they
    /// agree. Without expectations (`nil`) no event may be raised. Both lists are sorted by
    /// query (canonical id, stably) and compared pairwise; within an event the document
    /// changes are compared as sets keyed by document key (their order within the snapshot is
    /// not part of the contract).
    static func compareEvents(expected: [SpecEvent]?, actual: [SpecActualEvent]) -> [String] {
        guard let expected else {
            return actual.map { "unexpected event: \($0)" }
        }
        let expectedSorted = expected.enumerated()
            .sorted { ($0.element.query.query.canonicalID, $0.offset) < ($1.element.query.query.canonicalID, $1.offset) }
            .map(\.element)
        let actualSorted = actual.enumerated()
            .sorted { ($0.element.query.canonicalID, $0.offset) < ($1.element.query.canonicalID, $1.offset) }
            .map(\.element)
        var problems: [String] = []
        if expectedSorted.count != actualSorted.count {
            problems.append("expected \(expectedSorted.count) event(s), got \(actualSorted.count)")
        }
        for i in 0..<max(expectedSorted.count, actualSorted.count) {
            switch (i < expectedSorted.count ? expectedSorted[i] : nil, i < actualSorted.count ? actualSorted[i] : nil) {
            case let (e?, a?):
                let mismatches = compareEvent(expected: e, actual: a)
                if !mismatches.isEmpty {
                    problems.append("event \(i) differs (\(mismatches.joined(separator: "; ")))")
                    problems.append("  expected: \(e)")
                    problems.append("  actual:   \(a)")
                }
            case let (e?, nil):
                problems.append("missing event: \(e)")
            case let (nil, a?):
                problems.append("unexpected event: \(a)")
            case (nil, nil):
                break
            }
        }
        return problems
    }

    /// What differs between one expected and one actual event (short phrases).
    static func compareEvent(expected: SpecEvent, actual: SpecActualEvent) -> [String] {
        var mismatches: [String] = []
        if expected.query.query != actual.query {
            mismatches.append("query")
        }
        if expected.errorCode != 0 {
            if actual.error?.code.rawValue != expected.errorCode {
                mismatches.append("error code")
            }
            return mismatches
        }
        if actual.error != nil {
            mismatches.append("error instead of a snapshot")
            return mismatches
        }
        let expectedChanges = expected.changes.sorted { $0.document.key < $1.document.key }
        let actualChanges = actual.changes.sorted { $0.document.key < $1.document.key }
        if expectedChanges.count != actualChanges.count {
            mismatches.append("number of changes")
        } else {
            for (e, a) in zip(expectedChanges, actualChanges) where e.kind != a.kind || !e.document.matches(a.document) {
                mismatches.append("change of \(e.document.key)")
            }
        }
        if expected.fromCache != actual.fromCache { mismatches.append("fromCache") }
        if expected.hasPendingWrites != actual.hasPendingWrites { mismatches.append("hasPendingWrites") }
        return mismatches
    }

    /// The difference between two key sets, or `nil` when they are equal.
    static func compareKeys(_ name: String, expected: [DocumentKey], actual: [DocumentKey]) -> String? {
        let e = Set(expected), a = Set(actual)
        guard e != a else { return nil }
        var parts: [String] = []
        let missing = e.subtracting(a).sorted(), extra = a.subtracting(e).sorted()
        if !missing.isEmpty { parts.append("missing " + list(missing)) }
        if !extra.isEmpty { parts.append("unexpected " + list(extra)) }
        return "\(name): " + parts.joined(separator: "; ")
    }

    /// Keys for a message: at most 10, then how many more.
    private static func list(_ keys: [DocumentKey]) -> String {
        let shown = keys.prefix(10).map(\.description).joined(separator: ", ")
        return keys.count > 10 ? shown + " and \(keys.count - 10) more" : shown
    }
}
