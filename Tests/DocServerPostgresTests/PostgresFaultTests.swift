import DocModel
import DocServer
import DocServerPostgres
import DocTestSupport
import PostgresTestSupport
import Testing

/// The database unreachable at start, lost while running, and back.
@Suite struct PostgresFaultTests {
    @Test func anUnreachableDatabaseIsNamedWithoutItsPassword() async throws {
        let port = try PostgresCluster.freePort()   // nothing listens there
        let url = "postgres://alice:s3cret-pw@127.0.0.1:\(port)/app"
        // Timeouts far above the bound below: a refused connection must fail at once, not
        // when a timeout ends. The bound is a liveness cap, not a timing: this call takes
        // milliseconds alone, and once 35 s in a full suite run, waiting for a thread.
        let options = testOptions(operationTimeout: .seconds(600), connectTimeout: .seconds(600))
        let started = ContinuousClock.now
        let error = await #expect(throws: DocError.self) {
            try await PostgresServerStore.connect(url: url, options: options)
        }
        #expect(error?.code == .unavailable)
        let text = error?.description ?? ""
        #expect(text.contains("postgres://alice:***@127.0.0.1:\(port)/app"), "\(text)")
        #expect(!text.contains("s3cret-pw"), "\(text)")
        #expect(ContinuousClock.now - started < .seconds(300), "the start-up failure is reported, not waited on")
    }

    /// Aggregations have a timeout of their own (`aggregationTimeout`, longer than the
    /// operation timeout by default, since one reads every matching document): with it at
    /// 1 ns an aggregation is answered `unavailable` while queries on the same store, under
    /// the operation timeout, are answered.
    @Test func anAggregationHasATimeoutOfItsOwn() async throws {
        #expect(PostgresServerStore.Options().aggregationTimeout > PostgresServerStore.Options().operationTimeout)
        let url = try await freshDatabase("aggtimeout")
        var options = testOptions()
        options.aggregationTimeout = .nanoseconds(1)
        let store = try await PostgresServerStore.connect(url: url, options: options)
        let tenant = try await store.tenant(TenantID("acme"))
        try await P.touch(tenant, "items/a", batch: 1)
        let target = try DocModel.Query(collection: "items").toTarget()
        #expect(try await tenant.query(target, limit: nil).documents.count == 1)
        let error = await #expect(throws: DocError.self) { try await tenant.aggregate(target, [try AggregateField.count()]) }
        #expect(error?.code == .unavailable && error?.message.contains("did not answer within") == true, "\(String(describing: error))")
        await store.close()
    }

    @Test func anUnknownDatabaseIsAClearError() async throws {
        let cluster = try await PostgresCluster.shared()
        let url = "postgres://postgres:hunter2@127.0.0.1:\(cluster.port)/no_such_database"
        let error = await #expect(throws: DocError.self) { try await PostgresServerStore.connect(url: url, options: testOptions()) }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("no_such_database") == true && error?.message.contains("does not exist") == true,
                "\(String(describing: error))")
        #expect(error?.description.contains("hunter2") == false)
    }

    @Test func aUnixSocketURLWorks() async throws {
        let cluster = try await PostgresCluster.shared()
        let url = try await freshDatabase("socket")
        let viaSocket = "postgres://postgres@:\(cluster.port)/\(databaseName(url))?host=\(cluster.directory)&sslmode=disable"
        let store = try await PostgresServerStore.connect(url: viaSocket, options: testOptions())
        let tenant = try await store.tenant(TenantID("acme"))
        try await P.touch(tenant, "a/1", batch: 1)
        #expect(try await tenant.documents([P.key("a/1")]).documents.count == 1)
        await store.close()
    }

    /// The database stops while the store is open: calls fail with `unavailable` (no crash, no
    /// hang); it comes back on the same address: calls work again on the same store, and the
    /// `LISTEN` connection is made again.
    @Test func aLostDatabaseIsUnavailableThenRecovers() async throws {
        let cluster = try await PostgresCluster.start()
        defer { cluster.stop() }
        let options = testOptions(notices: .listen(safetyPollMilliseconds: 600_000), operationTimeout: .seconds(5))
        let store = try await PostgresServerStore.connect(url: cluster.url, options: options)
        let writer = try await PostgresServerStore.connect(url: cluster.url, options: testOptions(notices: .listen))
        let recorder = NoticeRecorder(try #require(store.commitNotices()))
        let tenant = try await store.tenant(TenantID("acme"))
        let writerTenant = try await writer.tenant(TenantID("acme"))
        let before = try await P.touch(tenant, "a/1", batch: 1)

        try await cluster.kill()
        let started = ContinuousClock.now
        let commit = await #expect(throws: DocError.self) { try await P.touch(tenant, "a/2", batch: 2) }
        #expect(commit?.code == .unavailable, "\(String(describing: commit))")
        let read = await #expect(throws: DocError.self) { try await tenant.documents([P.key("a/1")]) }
        #expect(read?.code == .unavailable, "\(String(describing: read))")
        let health = await #expect(throws: DocError.self) { try await store.checkHealth() }
        #expect(health?.code == .unavailable)
        let other = await #expect(throws: DocError.self) { try await store.tenant(TenantID("newcomer")) }
        #expect(other?.code == .unavailable)
        // Four calls, each bounded by its 5 s operation timeout; the cap allows for the waits
        // for a thread when the whole suite runs (a liveness cap, not a timing).
        #expect(ContinuousClock.now - started < .seconds(180), "every call answered, none hung")

        try await cluster.restart()
        // Back without reopening: the pool reconnects (with its backoff) on its own.
        let healthy = await eventually { (try? await store.checkHealth()) != nil }
        #expect(healthy)
        var after: SnapshotVersion?
        for attempt in 0..<50 where after == nil {
            after = try? await P.touch(tenant, "a/2", batch: 10 + attempt)
            if after == nil { try await Task.sleep(for: .milliseconds(200)) }
        }
        let version = try #require(after)
        #expect(version > before)
        let read2 = try await tenant.documents([P.key("a/1"), P.key("a/2")])
        #expect(read2.documents.count == 2, "the commit before the loss survived it")

        // The LISTEN connection is back too: a commit of the other instance is heard (only
        // LISTEN can deliver it: the safety poll is 10 minutes).
        var heard = false
        for batch in 0..<40 where !heard {
            guard let v = try? await P.touch(writerTenant, "b/1", client: "writer", batch: batch) else {
                try await Task.sleep(for: .milliseconds(200))
                continue
            }
            heard = await eventually(1) { recorder.contains(tenant: "acme", atLeast: v) }
        }
        #expect(heard, "notices resume after the database comes back: \(recorder.all)")
        recorder.cancel()
        await store.close()
        await writer.close()
    }
}
