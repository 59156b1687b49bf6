import DocCache
import DocModel
import Foundation

/// The number of cached documents of `cache-query`, `cold-open` and `cache-rss`:
/// `DOCBENCH_CACHE_DOCUMENTS`, default 100,000 (the scale table of docs/performance.md runs
/// 10,000, 100,000 and 1,000,000). Throws `invalidArgument` for a value that is not a whole
/// number of at least 1,000.
func cacheDocumentCount() throws(DocError) -> Int {
    try environmentCount("DOCBENCH_CACHE_DOCUMENTS", default: 100_000, minimum: 1_000)
}

/// The composite index the bounded category query needs (declared as the GRDB peer's schema
/// declares its own).
func categoryScoreIndex() throws -> CompositeIndex {
    try CompositeIndex(collectionGroup: "items", fields: [.init("category"), .init("score", .descending)])
}

/// `cache-rss`: the resident memory of a process that opens a store of
/// ``cacheDocumentCount()`` documents (+ 1,000 pending writes) and keeps 10 bounded listeners
/// (`category == cN order by score desc limit 50`, N = 0…9) with their first snapshots. The
/// store is written by this process, then each sample is a fresh child process (`docbench
/// cache-rss-child DIR`), so the figure is the reading process's alone. Samples in MB
/// (VmRSS after the snapshots); the peak (VmHWM) is an extra line.
func cacheRSS(runs: Int) async throws -> Result {
    let dir = temporaryDirectory("cache-rss")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try await populatedStore(dir, count: try cacheDocumentCount(), pendingWrites: 1_000, indexes: [try categoryScoreIndex()])
    await store.close()
    var resident: [Double] = []
    var peak: [Double] = []
    for _ in 0..<runs {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["cache-rss-child", dir]
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        let words = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard child.terminationStatus == 0, words.count == 3, words[0] == "rss",
              let rss = Double(words[1]), let hwm = Double(words[2])
        else {
            throw DocError(.internal, "cache-rss-child failed (status \(child.terminationStatus)): \(String(decoding: data, as: UTF8.self))")
        }
        resident.append(rss / 1024)
        peak.append(hwm / 1024)
    }
    var result = Result(samples: resident, peer: nil, peerSamples: nil)
    result.unit = "MB"
    result.figures = [Figure(scenario: "cache-rss-peak", unit: "MB", value: percentile(peak.sorted(), 0.5))]
    return result
}

/// The child of `cache-rss`: opens the store in `directory`, attaches the 10 listeners, waits
/// for their first snapshots and prints `rss <VmRSS kB> <VmHWM kB>`.
func cacheRSSChild(directory: String) async throws {
    let store = try await DocumentStore.open(directory: directory, tenant: "bench", user: "u")
    try await store.setIndexConfiguration([try categoryScoreIndex()])
    let (firsts, continuation) = AsyncStream<Int>.makeStream()
    var registrations: [ListenerRegistration] = []
    for category in 0..<10 {
        let query = try store.collection("items").whereField("category", isEqualTo: .string("c\(category)"))
            .order(by: "score", descending: true).limit(to: 50)
        registrations.append(try await query.addSnapshotListener { result in
            if case .success(let snapshot) = result { continuation.yield(snapshot.count) }
        })
    }
    var iterator = firsts.makeAsyncIterator()
    for _ in 0..<10 {
        guard let count = await iterator.next(), count == 50 else { throw DocError(.internal, "a listener's first snapshot did not have 50 documents") }
    }
    let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
    func kilobytes(_ name: String) -> String {
        status.split(separator: "\n").first { $0.hasPrefix(name + ":") }?
            .split(whereSeparator: \.isWhitespace).dropFirst().first.map(String.init) ?? "?"
    }
    print("rss \(kilobytes("VmRSS")) \(kilobytes("VmHWM"))")
    for registration in registrations { registration.remove() }
    await store.close()
}
