import DocModel
import DocServer
import DocServerPostgres
import DocTestSupport
import Testing

/// ``PostgresServerStore/commitNotices()``: an instance hears of the commits of another.
@Suite struct PostgresNoticeTests {
    @Test func listenModeDeliversCommitsOfAnotherInstance() async throws {
        let url = try await freshDatabase("listen")
        // The safety poll is too slow to matter here: what arrives comes from LISTEN/NOTIFY.
        let listener = try await PostgresServerStore.connect(url: url, options: testOptions(notices: .listen(safetyPollMilliseconds: 600_000)))
        let writer = try await PostgresServerStore.connect(url: url, options: testOptions(notices: .listen))
        let notices = try #require(listener.commitNotices())
        let recorder = NoticeRecorder(notices)
        let tenant = try await writer.tenant(TenantID("acme"))
        // The listen connection starts in the background: commit until a notice comes back.
        var heard = false
        var last = SnapshotVersion.none
        for batch in 0..<30 where !heard {
            last = try await P.touch(tenant, "a/1", batch: batch)
            heard = await eventually(1) { recorder.contains(tenant: "acme", atLeast: last) }
        }
        #expect(heard, "no notice for a commit of another instance: \(recorder.all)")
        // Once listening, every later commit is heard with its exact version.
        let next = try await P.touch(tenant, "a/1", batch: 100)
        #expect(await eventually { recorder.all.contains(CommitNotice(tenant: try! TenantID("acme"), version: next)) })
        recorder.cancel()
        await listener.close()
        await writer.close()
    }

    @Test func pollModeDeliversCommitsOfAnotherInstance() async throws {
        let url = try await freshDatabase("poll")
        let listener = try await PostgresServerStore.connect(url: url, options: testOptions(notices: .poll(milliseconds: 50)))
        let writer = try await PostgresServerStore.connect(url: url, options: testOptions(notices: .poll(milliseconds: 50)))
        // A tenant that exists before the listener subscribes and never commits.
        _ = try await writer.tenant(TenantID("quiet"))
        let recorder = NoticeRecorder(try #require(listener.commitNotices()))
        let tenant = try await writer.tenant(TenantID("acme"))
        var heard = false
        for batch in 0..<30 where !heard {
            let version = try await P.touch(tenant, "a/1", batch: batch)
            heard = await eventually(2) { recorder.contains(tenant: "acme", atLeast: version) }
        }
        #expect(heard, "no notice for a commit of another instance: \(recorder.all)")
        #expect(!recorder.all.contains { $0.tenant.rawValue == "quiet" }, "a tenant without commits is not announced")
        recorder.cancel()
        await listener.close()
        await writer.close()
    }

    /// Poll mode must not call `pg_notify` (CockroachDB and YugabyteDB lack it): a listening
    /// instance hears the next listen-mode commit first, which it would not if the poll-mode
    /// commit before it had notified (notifications arrive in commit order).
    @Test func pollModeSendsNoNotifications() async throws {
        let url = try await freshDatabase("nonotify")
        let listener = try await PostgresServerStore.connect(url: url, options: testOptions(notices: .listen(safetyPollMilliseconds: 600_000)))
        let notifying = try await PostgresServerStore.connect(url: url, options: testOptions(notices: .listen))
        let polling = try await PostgresServerStore.connect(url: url, options: testOptions(notices: .poll(milliseconds: 1_000)))
        let recorder = NoticeRecorder(try #require(listener.commitNotices()))
        let loud = try await notifying.tenant(TenantID("loud"))
        let silent = try await polling.tenant(TenantID("silent"))
        // Wait until the listener hears the notifying instance.
        var heard = false
        for batch in 0..<30 where !heard {
            let version = try await P.touch(loud, "a/1", batch: batch)
            heard = await eventually(1) { recorder.contains(tenant: "loud", atLeast: version) }
        }
        #expect(heard)
        let before = recorder.all.count
        try await P.touch(silent, "a/1", batch: 1)
        let marker = try await P.touch(loud, "a/1", batch: 1_000)
        #expect(await eventually { recorder.contains(tenant: "loud", atLeast: marker) })
        let after = recorder.all.dropFirst(before)
        #expect(!after.contains { $0.tenant.rawValue == "silent" }, "the poll-mode commit notified: \(Array(after))")
        recorder.cancel()
        await listener.close()
        await notifying.close()
        await polling.close()
    }

    /// Closing a store while its notice listener connects or listens closes that connection
    /// whatever ends the listen (a debug build of postgres-nio stops the process on a
    /// connection released unclosed; found by `ConvergenceTests`, whose instances restart):
    /// stores closed at moments spread over their listener's start, and then no connection of
    /// theirs stays on the server.
    @Test func closingAStoreWhileItListensLeavesNoConnectionOpen() async throws {
        let url = try await freshDatabase("closelisten")
        for i in 0..<20 {
            let store = try await PostgresServerStore.connect(url: url, options: testOptions(notices: .listen))
            _ = store.commitNotices()
            try await Task.sleep(for: .microseconds(250 * i))
            await store.close()
        }
        let closed = await eventually { (try? await openConnections(to: url)) == 0 }
        let left = try await openConnections(to: url)
        #expect(closed, "connections left open: \(left)")
    }

    @Test func noticesEndWhenTheStoreCloses() async throws {
        let url = try await freshDatabase("endnotice")
        let store = try await PostgresServerStore.connect(url: url, options: testOptions(notices: .listen))
        let notices = try #require(store.commitNotices())
        let ended = Task {
            for await _ in notices {}
            return true
        }
        await store.close()
        #expect(await ended.value)
        // A subscription after close ends at once.
        let late = try #require(store.commitNotices())
        var count = 0
        for await _ in late { count += 1 }
        #expect(count == 0)
    }
}
