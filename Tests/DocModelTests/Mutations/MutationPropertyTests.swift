import Testing
@testable import DocModel
import DocTestTraits

/// Seeded random checks of the laws the three application contexts must obey.
@Suite("Mutation properties", .cpuBound)
struct MutationPropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 0xD0C_CAC4E, 0xFEED_FACE]
    static let rounds = 300

    static func server(_ m: Mutation, _ doc: MaybeDocument?) -> Result<(MaybeDocument?, MutationResult), DocError> {
        Result { () throws(DocError) in try m.applyOnServer(doc, commitVersion: Fx.v2) }
    }

    @Test(arguments: seeds)
    func generatedMutationsAreValidAndIdempotent(_ seed: UInt64) throws {
        var random = MutationRandom(seed: seed)
        var kinds: Set<String> = []
        for round in 0..<Self.rounds {
            let m = random.mutation(idempotent: true)
            let base = random.base(allowUnknown: true)
            let note = Comment(rawValue: "seed \(seed) round \(round): \(m) on \(String(describing: base))")
            try m.validate()
            #expect(m.isIdempotent, note)
            kinds.insert("\(m.kind)".prefix(while: { $0 != "(" }).description)

            // Local view.
            let local = m.applyToLocalView(base, localWriteTime: Fx.localTime)
            #expect(m.applyToLocalView(local, localWriteTime: Fx.localTime) == local, note)

            // Server (a server never holds an unknown document).
            if case .unknown? = base {} else {
                switch Self.server(m, base) {
                case .success(let (once, result)):
                    let twice = try m.applyOnServer(once, commitVersion: Fx.v2)
                    #expect(twice.0 == once, note)
                    #expect(twice.1 == result, note)
                case .failure(let error):
                    #expect([.notFound, .invalidArgument].contains(error.code), note)
                    #expect(throws: DocError.self, note) { try m.applyOnServer(base, commitVersion: Fx.v2) }
                }
            }

            // Acknowledgement.
            let result = m.fakeResult()
            let acked = m.applyToRemoteDocument(base, result: result)
            #expect(m.applyToRemoteDocument(acked, result: result) == acked, note)
        }
        #expect(kinds == ["set", "patch", "delete", "tombstone"], "the generator covers every kind")
    }

    @Test(arguments: seeds)
    func localViewAcknowledgementAndServerAgree(_ seed: UInt64) throws {
        var random = MutationRandom(seed: seed &+ 1000)
        var agreed = 0
        for round in 0..<Self.rounds {
            let m = random.mutation(idempotent: false)
            let base = random.base(allowUnknown: false)
            let note = Comment(rawValue: "seed \(seed) round \(round): \(m) on \(String(describing: base))")
            let local = m.applyToLocalView(base, localWriteTime: Fx.localTime)
            switch Self.server(m, base) {
            case .failure(let error):
                // The server rejects exactly what the local view skips.
                #expect(error.code == .notFound, note)
                #expect(local == base, note)
            case .success(let (stored, result)):
                agreed += 1
                // The acknowledgement with the server's result reproduces the server's document.
                let acked = m.applyToRemoteDocument(base, result: result)
                switch (acked, stored) {
                case let (.document(a)?, .document(s)?):
                    #expect(a.data == s.data, note)
                    #expect(a.version == s.version && a.createTime == s.createTime, note)
                    #expect(a.hasCommittedMutations && !s.hasCommittedMutations, note)
                case let (.noDocument(a)?, .noDocument(s)?):
                    #expect(a.version == s.version, note)
                default:
                    Issue.record("acknowledged \(String(describing: acked)) vs server \(String(describing: stored)); \(note)")
                }
                // The local view is the server's document with pending timestamps in place of the commit time.
                switch (local, stored) {
                case let (.document(l)?, .document(s)?):
                    let resolved = Value.map(l.data.fields).resolvingServerTimestamps(Fx.v2.timestamp)
                    #expect(resolved.isIdentical(to: .map(s.data.fields)), note)
                    #expect(l.hasLocalMutations, note)
                case (.noDocument?, .noDocument?):
                    break
                default:
                    Issue.record("local \(String(describing: local)) vs server \(String(describing: stored)); \(note)")
                }
            }
        }
        #expect(agreed > Self.rounds / 2, "most generated writes commit")
    }

    @Test func splitMixIsDeterministic() {
        var a = SplitMix64(seed: 42), b = SplitMix64(seed: 42), c = SplitMix64(seed: 43)
        let xs = (0..<5).map { _ in a.next() }
        #expect(xs == (0..<5).map { _ in b.next() })
        #expect(xs != (0..<5).map { _ in c.next() })
        // The reference sequence of SplitMix64 seeded with 0.
        var z = SplitMix64(seed: 0)
        #expect(z.next() == 0xE220_A839_7B1D_CDAF)
    }
}
