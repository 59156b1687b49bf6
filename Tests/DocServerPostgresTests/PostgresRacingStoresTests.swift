import DocModel
import DocServer
import DocServerPostgres
import DocTestSupport
import Testing

/// Two store instances on one database, as two server processes would be: the database
/// orders the commits of a tenant, deduplicates batches and refuses stale reads.
@Suite struct PostgresRacingStoresTests {
    @Test func racingIncrementsLoseNothing() async throws {
        let url = try await freshDatabase("race")
        // 200 increments start at once and queue for 2 × 4 pooled connections; the operation
        // timeout counts that queue too, which on a loaded 2-core CI machine (the whole suite
        // running beside) has exceeded the default 10 s, and with two CPU hogs beside the suite
        // 60 s. Correctness is what is tested here: the cap is `eventually`'s.
        let options = testOptions(operationTimeout: .seconds(livenessCap))
        let a = try await PostgresServerStore.connect(url: url, options: options)
        let b = try await PostgresServerStore.connect(url: url, options: options)
        let tenantA = try await a.tenant(TenantID("acme"))
        let tenantB = try await b.tenant(TenantID("acme"))
        let created = try await tenantA.state().lastVersion
        let total = 200

        let results = try await withThrowingTaskGroup(of: Increment.self) { group in
            for i in 0..<total {
                let tenant = i % 2 == 0 ? tenantA : tenantB
                group.addTask { try await increment(tenant, "counters/c", client: i % 2 == 0 ? "A" : "B", batch: i) }
            }
            return try await group.reduce(into: [Increment]()) { $0.append($1) }
        }

        // No lost update: the counter is exactly the number of increments, and each commit saw
        // the value the previous one wrote.
        let final = try await tenantB.documents([P.key("counters/c")])
        #expect(final.documents[P.key("counters/c")]?.data["n"] == .integer(Int64(total)))
        let ordered = results.sorted { $0.version < $1.version }
        #expect(ordered.map(\.value) == (1...Int64(total)).map { $0 })
        // Versions strictly increasing, each commit directly after the one before it.
        #expect(Set(results.map(\.version)).count == total)
        #expect(ordered.first?.previous == created)
        for (before, after) in zip(ordered, ordered.dropFirst()) {
            #expect(after.previous == before.version, "commit at \(after.version) came after \(after.previous), expected \(before.version)")
        }
        #expect(try await tenantA.state().lastVersion == ordered.last?.version)
        // The change log has every commit, in order.
        guard case .complete(let log, _) = try await tenantA.changes(after: created, maxEntries: 10_000) else {
            Issue.record("log unavailable")
            return
        }
        #expect(log.map(\.version) == ordered.map(\.version))
        #expect(log.compactMap { $0.document.document?.data["n"]?.integerValue } == (1...Int64(total)).map { $0 })
        #expect(results.contains { $0.attempts > 1 }, "the increments did race (some were aborted and applied again)")
        await a.close()
        await b.close()
    }

    @Test func aBatchSentToBothInstancesIsAppliedOnce() async throws {
        let url = try await freshDatabase("dedupe")
        let a = try await PostgresServerStore.connect(url: url, options: testOptions())
        let b = try await PostgresServerStore.connect(url: url, options: testOptions())
        let tenantA = try await a.tenant(TenantID("acme"))
        let tenantB = try await b.tenant(TenantID("acme"))
        let batches = 20

        /// Commits batch `i` (an increment) until it is stored or reported as a duplicate.
        @Sendable func send(_ tenant: any TenantStore, _ i: Int) async throws -> CommitResult {
            let key = P.key("counters/c")
            while true {
                let read = try await tenant.documents([key])
                let current = read.documents[key]
                let version = SnapshotVersion(microseconds: max(ServerClock.system.nowMicros(), read.version.microseconds + 1))
                let value = (current?.data["n"]?.integerValue ?? 0) + 1
                let document = Document(key: key, data: ObjectValue(["n": .integer(value)]), version: version)
                let result: Result<CommitResult, DocError>
                do {
                    result = .success(try await tenant.commit(CommitRequest(
                        outcome: P.committed("client", i, version: version), writes: [DocumentWrite(key: key, document: document)],
                        readVersions: [key: current?.version ?? .none])))
                } catch {
                    result = .failure(error)
                }
                switch result {
                case .success(let answer): return answer
                case .failure(let error) where error.code == .aborted: continue
                case .failure(let error): throw error
                }
            }
        }

        for i in 0..<batches {
            async let viaA = send(tenantA, i)
            async let viaB = send(tenantB, i)
            let answers = try await [viaA, viaB]
            let stored = answers.filter { if case .stored = $0 { return true } else { return false } }
            #expect(stored.count == 1, "batch \(i): \(answers)")
        }
        let final = try await tenantA.documents([P.key("counters/c")])
        #expect(final.documents[P.key("counters/c")]?.data["n"] == .integer(Int64(batches)))
        await a.close()
        await b.close()
    }
}
