import Testing
@testable import DocCache
import DocModel
import DocProtocol
import DocTestTraits

private typealias F = RemoteFixtures

/// Vectors computed independently with Python's `hashlib` (no code of this project):
///
/// ```python
/// import hashlib, struct, math
/// def halves(s): return struct.unpack('<QQ', hashlib.md5(s.encode('utf-8')).digest())
/// def index(s, i, m): h1, h2 = halves(s); return ((h1 + i * h2) % 2**64) % m
/// def build(names, p):   # the server's sizing: m = ceil(-n ln p / ln2²), k = round(m/n ln 2)
///     n = max(len(names), 1); m = max(1, math.ceil(-n * math.log(p) / math.log(2) ** 2))
///     k = max(1, round(m / n * math.log(2))); bm = bytearray((m + 7) // 8)
///     for s in names:
///         for i in range(k): j = index(s, i, m); bm[j // 8] |= 1 << (j % 8)
///     return m, k, bytes(bm)
/// ```
enum BloomVectors {
    static let database = "projects/doccache/databases/(default)"
    static func name(_ path: String, database: String = database) -> String { database + "/documents/" + path }

    /// `halves(s)` for a few names.
    static let hashes: [(String, UInt64, UInt64)] = [
        ("", 0x04b2_008f_d98c_1dd4, 0x7e42_f8ec_9809_80e9),
        ("abc", 0xb04f_d23c_9850_0190, 0x727f_e128_7d3f_96d6),
        ("projects/test-project/databases/(default)/documents/collection/a", 0xf119_8ee1_8c87_14b2, 0x8dc0_22b1_d783_59f5),
        ("projects/test-project/databases/(default)/documents/collection/\u{C0}\u{D2}\u{2211}", 0xebed_1cd4_014a_9ef1, 0xe8a0_bc18_fb0f_efea),
    ]

    /// `[index("abc", i, 100) for i in range(5)]`.
    static let abcIndexes = [92, 14, 52, 74, 12]

    /// `build([name("notes/n%d" % i) for i in range(7)], 0.01)`: 68 bits (padding 4), 7 hashes.
    /// Of `notes/n7` … `notes/n29`, only `notes/n15` tests positive (a false positive).
    static let notesBitmap: [UInt8] = [67, 156, 60, 251, 99, 21, 136, 217, 13]   // "Q5w8+2MViNkN"
    static let notesPadding = 4
    static let notesHashCount = 7
    static let notesFalsePositive = 15

    static func note(_ i: Int) -> DocumentKey { F.key("notes/n\(i)") }
}

@Suite("Bloom filter", .cpuBound)
struct BloomFilterTests {
    typealias V = BloomVectors

    @Test func md5HalvesAreReadLittleEndian() {
        for (name, h1, h2) in V.hashes {
            let hash = BloomFilterHash.hash(name)
            #expect(hash.h1 == h1, "h1 of \(name)")
            #expect(hash.h2 == h2, "h2 of \(name)")
        }
    }

    @Test func bitIndexesAreDoubleHashesModuloTheBitCount() {
        let hash = BloomFilterHash.hash("abc")
        #expect((0..<5).map { BloomFilterHash.bitIndex(hash, $0, bitCount: 100) } == V.abcIndexes)
        // The sum wraps at 64 bits instead of trapping.
        let wrapping = (h1: UInt64.max, h2: UInt64.max)
        #expect(BloomFilterHash.bitIndex(wrapping, 1, bitCount: 7) == Int((UInt64.max &+ UInt64.max) % 7))
    }

    @Test func firestoresOwnFilterFromTheSpecTests() throws {
        // From existence_filter_spec_test.json: the filter of the one document left, "collection/a".
        let bitmap = try Base64.decode("AhAAApAAAIAEBIAABA==").get()
        let filter = try BloomFilter(bitmap: bitmap, padding: 4, hashCount: 10)
        #expect(bitmap.count == 13 && filter.bitCount == 13 * 8 - 4)
        let test = "projects/test-project/databases/(default)"
        #expect(filter.mightContain(V.name("collection/a", database: test)))
        #expect(!filter.mightContain(V.name("collection/b", database: test)))
        // The same key in another database is another name.
        #expect(!filter.mightContain(V.name("collection/a")))
    }

    @Test func containsEveryInsertedNameAndRulesOutOthers() throws {
        let filter = try BloomFilter(bitmap: V.notesBitmap, padding: V.notesPadding, hashCount: V.notesHashCount)
        #expect(filter.bitCount == 68)
        for i in 0..<7 {
            #expect(filter.mightContain(V.name("notes/n\(i)")), "inserted notes/n\(i)")
        }
        for i in 7..<30 {
            #expect(filter.mightContain(V.name("notes/n\(i)")) == (i == V.notesFalsePositive), "notes/n\(i)")
        }
    }

    @Test func paddingBitsAreNotPartOfTheFilter() throws {
        // One byte, all set: 8 bits without padding, 1 with padding 7; every name then tests
        // positive either way, but the indexes stay below the bit count.
        let full = try BloomFilter(bitmap: [0xFF], padding: 7, hashCount: 3)
        #expect(full.bitCount == 1)
        #expect(full.mightContain("anything"))
        // Only the padding bits set: nothing is in the filter.
        let paddingOnly = try BloomFilter(bitmap: [0b1111_0000], padding: 4, hashCount: 2)
        #expect(!paddingOnly.mightContain("anything"))
        #expect(!paddingOnly.mightContain("abc"))
    }

    @Test func anEmptyFilterContainsNothing() throws {
        let empty = try BloomFilter(bitmap: [], padding: 0, hashCount: 0)
        #expect(empty.bitCount == 0)
        #expect(!empty.mightContain(""))
        #expect(!empty.mightContain(V.name("notes/n0")))
    }

    @Test(arguments: [
        ([UInt8](), 1, 0),    // padding without a bitmap
        ([1], -1, 1),         // negative padding
        ([1], 8, 1),          // padding of a whole byte or more
        ([1], 0, -1),         // negative hash count
        ([1], 0, 0),          // a bitmap without hashes
        ([], 0, -1),
    ])
    func invalidParametersAreRefused(bitmap: [UInt8], padding: Int, hashCount: Int) {
        let error = #expect(throws: DocError.self) { try BloomFilter(bitmap: bitmap, padding: padding, hashCount: hashCount) }
        #expect(error?.code == .invalidArgument)
    }
}

/// The aggregator with bloom filters (Firestore's `HandleExistenceFilter` / `ApplyBloomFilter`).
@Suite("Existence filters with bloom filters", .cpuBound)
struct BloomExistenceFilterTests {
    typealias V = BloomVectors
    let provider = FakeTargetMetadataProvider()

    var notesFilter: WatchChange.BloomFilterParameters {
        .init(bitmap: V.notesBitmap, padding: V.notesPadding, hashCount: V.notesHashCount)
    }

    /// An aggregator whose query target 2 holds `keys` and is current, its first event taken,
    /// recording the mismatches it reports.
    private func aggregator(holding keys: [DocumentKey], mismatches: Recorded) -> WatchChangeAggregator {
        provider.setSyncedKeys(Set(keys), for: F.queryTarget(2))
        let aggregator = WatchChangeAggregator(metadataProvider: provider)
        aggregator.onExistenceFilterMismatch = { mismatches.all.append($0) }
        aggregator.handle(.target(.init(state: .current, targetIDs: [2], resumeToken: F.token("t1"))))
        _ = aggregator.createRemoteEvent(at: F.version(1))
        return aggregator
    }

    final class Recorded {
        var all: [ExistenceFilterMismatch] = []
    }

    @Test func documentsRuledOutLeaveTheTargetWithoutAReQuery() {
        let recorded = Recorded()
        let aggregator = aggregator(holding: (0..<10).map(V.note), mismatches: recorded)
        // The server kept n0…n6: seven documents, the filter of their names.
        aggregator.handle(.existenceFilter(targetID: 2, count: 7, bloomFilter: notesFilter))
        let event = aggregator.createRemoteEvent(at: F.version(2))

        #expect(event.targetMismatches.isEmpty, "no re-query")
        #expect(event.targetChanges[2]?.removedDocuments == [V.note(7), V.note(8), V.note(9)])
        #expect(event.targetChanges[2]?.current == true, "the target stays current: its views resolve the removed ones in limbo")
        #expect(event.documentUpdates.isEmpty, "the documents themselves are not known to be deleted")
        #expect(recorded.all == [.init(targetID: 2, localCount: 10, serverCount: 7, outcome: .resolvedByBloomFilter(removed: 3))])
    }

    @Test func documentsAddedInTheSameEventCount() {
        let recorded = Recorded()
        let aggregator = aggregator(holding: [0, 1, 2, 3, 4, 5, 8, 9].map(V.note), mismatches: recorded)
        // n6 arrives before the filter (it changed since the token); n8 and n9 are gone.
        aggregator.handle(.document(.init(updatedTargetIDs: [2], removedTargetIDs: [], key: V.note(6), document: F.doc("notes/n6", 2))))
        aggregator.handle(.existenceFilter(targetID: 2, count: 7, bloomFilter: notesFilter))
        let event = aggregator.createRemoteEvent(at: F.version(2))

        #expect(event.targetMismatches.isEmpty)
        #expect(event.targetChanges[2]?.addedDocuments == [V.note(6)])
        #expect(event.targetChanges[2]?.removedDocuments == [V.note(8), V.note(9)])
        #expect(recorded.all.map(\.outcome) == [.resolvedByBloomFilter(removed: 2)])
    }

    @Test func aFalsePositiveFallsBackToAReQueryWithTheBloomPurpose() {
        let recorded = Recorded()
        // n15 is gone on the server, but the filter says it may be there.
        let aggregator = aggregator(holding: [0, 1, 2, 3, 4, 5, 6, 7, V.notesFalsePositive].map(V.note), mismatches: recorded)
        aggregator.handle(.existenceFilter(targetID: 2, count: 7, bloomFilter: notesFilter))
        let event = aggregator.createRemoteEvent(at: F.version(2))

        #expect(event.targetMismatches == [2: .existenceFilterMismatchBloom])
        #expect(event.targetChanges[2]?.removedDocuments.count == 9, "the target is reset: every document leaves it")
        #expect(event.targetChanges[2]?.current == false)
        #expect(recorded.all.map(\.outcome) == [.bloomFilterFalsePositive(removed: 1)])
    }

    @Test(arguments: [
        (WatchChange.BloomFilterParameters?.none, "no bloom filter"),
        (.some(.init(bitmap: [], padding: 0, hashCount: 0)), "empty bloom filter"),
        (.some(.init(bitmap: V.notesBitmap, padding: 0, hashCount: 0)), "hash count 0"),
        (.some(.init(bitmap: V.notesBitmap, padding: 8, hashCount: 7)), "padding 8"),
        (.some(.init(bitmap: V.notesBitmap, padding: 4, hashCount: -1)), "hash count -1"),
    ])
    func withoutAUsableFilterTheTargetIsReQueried(filter: WatchChange.BloomFilterParameters?, reason: String) {
        let recorded = Recorded()
        let aggregator = aggregator(holding: (0..<10).map(V.note), mismatches: recorded)
        aggregator.handle(.existenceFilter(targetID: 2, count: 7, bloomFilter: filter))
        let event = aggregator.createRemoteEvent(at: F.version(2))

        #expect(event.targetMismatches == [2: .existenceFilterMismatch])
        #expect(event.targetChanges[2]?.removedDocuments.count == 10)
        guard case .noUsableBloomFilter(let message)? = recorded.all.first?.outcome else {
            Issue.record("expected noUsableBloomFilter, got \(recorded.all)")
            return
        }
        #expect(message.contains(reason), "\(message)")
    }

    @Test func aMatchingCountIgnoresTheFilter() {
        let recorded = Recorded()
        let aggregator = aggregator(holding: (0..<10).map(V.note), mismatches: recorded)
        // The filter would rule out n7…n9, but the counts agree: nothing is removed.
        aggregator.handle(.existenceFilter(targetID: 2, count: 10, bloomFilter: notesFilter))
        let event = aggregator.createRemoteEvent(at: F.version(2))

        #expect(event.targetMismatches.isEmpty)
        #expect(event.targetChanges[2]?.removedDocuments.isEmpty != false)
        #expect(recorded.all.isEmpty)
    }

    @Test func namesUseTheAggregatorsDatabase() {
        let recorded = Recorded()
        provider.setSyncedKeys(Set((0..<10).map(V.note)), for: F.queryTarget(2))
        // Another database: none of these names is in the filter (checked with the Python above),
        // so all ten are ruled out and the count cannot match.
        let aggregator = WatchChangeAggregator(metadataProvider: provider, databaseName: "projects/other/databases/(default)")
        aggregator.onExistenceFilterMismatch = { recorded.all.append($0) }
        aggregator.handle(.existenceFilter(targetID: 2, count: 7, bloomFilter: notesFilter))
        let event = aggregator.createRemoteEvent(at: F.version(2))

        #expect(event.targetMismatches == [2: .existenceFilterMismatchBloom])
        #expect(recorded.all.map(\.outcome) == [.bloomFilterFalsePositive(removed: 10)])
    }
}

/// The remote store acting on what the aggregator decided: no re-listen after a bloom filter
/// settled the count, a re-listen with the bloom purpose after a false positive, and counters.
@Suite("Remote store: existence filters with bloom filters", .cpuBound)
struct RemoteStoreBloomFilterTests {
    typealias V = BloomVectors
    let scheduler = ManualScheduler()
    let datastore: FakeDatastore
    let localStore = FakeRemoteStoreDataSource()
    let syncer: FakeRemoteSyncer
    let remoteStore: RemoteStore

    init() {
        datastore = FakeDatastore(scheduler: scheduler)
        syncer = FakeRemoteSyncer(localStore: localStore)
        remoteStore = RemoteStore(localStore: localStore, datastore: datastore, scheduler: scheduler, backoffRandom: { 0.5 })
        remoteStore.syncer = syncer
        remoteStore.start()
    }

    /// Target 2 resumed, holding `held` notes, then the server's filter of n0…n6 and a snapshot.
    private func resume(holding held: [Int]) {
        remoteStore.listen(F.queryTarget(2, resumeToken: F.token("old")))
        datastore.watchAck([2])
        syncer.remoteKeysByTarget[2] = Set(held.map(V.note))
        datastore.watchFilter(
            targetID: 2, count: 7,
            bloomFilter: .init(bitmap: V.notesBitmap, padding: V.notesPadding, hashCount: V.notesHashCount))
        datastore.watchCurrent([2], resumeToken: F.token("new"))
        datastore.watchSnapshot(version: F.version(2_000))
    }

    @Test func aSettledCountNeedsNoReListen() {
        resume(holding: Array(0..<10))
        #expect(syncer.remoteEvents.first?.targetMismatches.isEmpty == true)
        #expect(syncer.remoteEvents.first?.targetChanges[2]?.removedDocuments == [V.note(7), V.note(8), V.note(9)])
        #expect(!datastore.watchStream!.requests.contains(.unwatch(2)), "no re-listen")
        #expect(remoteStore.listenTargets[2]?.resumeToken == F.token("new"))
        var expected = ExistenceFilterCounts()
        expected.mismatches = 1
        expected.resolvedByBloomFilter = 1
        expected.documentsRemovedByBloomFilter = 3
        #expect(remoteStore.existenceFilterCounts == expected)
    }

    @Test func aFalsePositiveReListensWithTheBloomPurpose() {
        resume(holding: Array(0..<8) + [V.notesFalsePositive])
        #expect(syncer.remoteEvents.first?.targetMismatches == [2: .existenceFilterMismatchBloom])
        guard case .watch(let relisten)? = datastore.watchStream!.requests.last else {
            Issue.record("expected a re-watch, got \(datastore.watchStream!.requests)")
            return
        }
        #expect(relisten.purpose == .existenceFilterMismatchBloom)
        #expect(relisten.resumeToken.isEmpty)
        #expect(remoteStore.listenTargets[2]?.purpose == .listen)
        var expected = ExistenceFilterCounts()
        expected.mismatches = 1
        expected.bloomFilterFalsePositives = 1
        #expect(remoteStore.existenceFilterCounts == expected)
    }
}
