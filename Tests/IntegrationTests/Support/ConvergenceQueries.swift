import DocCache
import DocModel
import DocTestSupport

/// A query a device listens to in ``ConvergenceTests``, and what each of its snapshots must
/// show whatever the moment: at most `limit` documents, each matching, in the query's order.
struct Watched {
    let query: DocumentQuery
    let limit: Int
    let matches: (DocumentSnapshot) -> Bool
    /// Whether two neighbours are in the query's order.
    let inOrder: (DocumentSnapshot, DocumentSnapshot) -> Bool
    /// Whether the device's cache alone answers it as the server does once synced: every
    /// document it could match is in a target that holds them all (the whole `items`
    /// collection is listened to); the first 20 comments are not.
    let cacheAnswers: Bool

    /// What is wrong with a snapshot, or nil.
    func violation(_ snapshot: QuerySnapshot) -> String? {
        let documents = snapshot.documents
        if documents.count > limit { return "\(documents.count) documents, limit \(limit)" }
        if let stray = documents.first(where: { !matches($0) }) { return "\(stray.path) does not match" }
        for (a, b) in zip(documents, documents.dropFirst()) where !inOrder(a, b) {
            return "\(a.path) before \(b.path)"
        }
        return nil
    }

    /// `n` of a document, when it is an integer.
    static func n(_ document: DocumentSnapshot) -> Int64? {
        if case .integer(let n)? = document.get("n") { return n } else { return nil }
    }

    static func byID(_ a: DocumentSnapshot, _ b: DocumentSnapshot) -> Bool { a.path < b.path }

    /// Ascending `n`, ties in document order (descending is the reverse of both).
    static func byN(_ a: DocumentSnapshot, _ b: DocumentSnapshot) -> Bool {
        guard let x = n(a), let y = n(b) else { return false }
        return x < y || (x == y && a.path < b.path)
    }
}

/// A random bounded query over `items` (the documents ``ConvergenceTests`` writes: `n`, `group`,
/// `merged`, `tags`), which a device listens to for a while and then lets go.
struct RandomItemsQuery: CustomStringConvertible {
    enum Filter {
        case none
        case group(Int64)
        case groups([Int64])
        case atLeast(Int64)
        case below(Int64)
        case tag(String)
        case merged
    }

    var filter: Filter
    /// Ordered by `n` (descending or not); nil: document order.
    var descending: Bool?
    var limit: Int
    /// `limit(toLast:)` rather than `limit(to:)` (only with an order).
    var last: Bool

    init(_ random: inout SplitMix64) {
        switch Int.random(in: 0..<7, using: &random) {
        case 0: filter = .none
        case 1: filter = .group(Int64.random(in: 0..<3, using: &random))
        case 2: filter = .groups([0, 1, 2].filter { _ in Bool.random(using: &random) } + [Int64.random(in: 0..<3, using: &random)])
        case 3: filter = .atLeast(Int64.random(in: 0..<100, using: &random))
        case 4: filter = .below(Int64.random(in: 0..<100, using: &random))
        case 5: filter = .tag("d\(Int.random(in: 0..<3, using: &random))")
        default: filter = .merged
        }
        let inequality: Bool
        switch filter {
        case .atLeast, .below: inequality = true
        default: inequality = false
        }
        // An inequality orders by its field.
        descending = inequality || Bool.random(using: &random) ? Bool.random(using: &random) : nil
        limit = Int.random(in: 1...8, using: &random)
        last = descending != nil && Int.random(in: 0..<3, using: &random) == 0
    }

    var description: String {
        let order = descending.map { $0 ? " order by n desc" : " order by n" } ?? ""
        return "items \(filter)\(order) \(last ? "limitToLast" : "limit") \(limit)"
    }

    /// The query on `store`, with what its snapshots must show.
    func watched(on store: DocumentStore) throws -> Watched {
        var query = try store.collection("items").query
        var matches: (DocumentSnapshot) -> Bool
        switch filter {
        case .none:
            matches = { _ in true }
        case .group(let group):
            query = try query.whereField("group", isEqualTo: .integer(group))
            matches = { $0.get("group") == .integer(group) }
        case .groups(let groups):
            query = try query.whereField("group", .in, .array(groups.map { .integer($0) }))
            matches = { document in groups.contains { document.get("group") == .integer($0) } }
        case .atLeast(let bound):
            query = try query.whereField("n", .greaterThanOrEqual, .integer(bound))
            matches = { (Watched.n($0) ?? .min) >= bound }
        case .below(let bound):
            query = try query.whereField("n", .lessThan, .integer(bound))
            matches = { (Watched.n($0) ?? .max) < bound }
        case .tag(let tag):
            query = try query.whereField("tags", .arrayContains, .string(tag))
            matches = { document in
                if case .array(let tags)? = document.get("tags") { return tags.contains(.string(tag)) } else { return false }
            }
        case .merged:
            query = try query.whereField("merged", isEqualTo: .boolean(true))
            matches = { $0.get("merged") == .boolean(true) }
        }
        var inOrder: (DocumentSnapshot, DocumentSnapshot) -> Bool = Watched.byID
        if let descending {
            query = try query.order(by: "n", descending: descending)
            let filterMatches = matches
            matches = { Watched.n($0) != nil && filterMatches($0) }
            if descending {
                inOrder = { Watched.byN($1, $0) }
            } else {
                inOrder = Watched.byN
            }
        }
        if last {
            query = try query.limit(toLast: limit)
        } else {
            query = try query.limit(to: limit)
        }
        return Watched(query: query, limit: limit, matches: matches, inOrder: inOrder, cacheAnswers: true)
    }
}
