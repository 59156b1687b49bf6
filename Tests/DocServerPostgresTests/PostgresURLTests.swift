import DocModel
import DocServer
import Testing
@testable import DocServerPostgres

@Suite struct PostgresURLTests {
    @Test func parsesTheLibpqForms() throws {
        let full = try PostgresURL("postgres://alice:p%40ss@db.example.com:6543/app_db?sslmode=require")
        #expect(full.user == "alice" && full.password == "p@ss")
        #expect(full.host == "db.example.com" && full.port == 6543 && full.database == "app_db")
        #expect(full.tls == .require && full.socketPath == nil)

        let plain = try PostgresURL("postgresql://bob@127.0.0.1/doccache")
        #expect(plain.user == "bob" && plain.password == nil && plain.port == 5432 && plain.tls == .prefer)

        let v6 = try PostgresURL("postgres://u@[::1]:5433/d")
        #expect(v6.host == "::1" && v6.port == 5433)

        let socket = try PostgresURL("postgres://u@/d?host=/var/run/postgresql&sslmode=disable")
        #expect(socket.socketPath == "/var/run/postgresql/.s.PGSQL.5432" && socket.tls == .disable)
        #expect(try PostgresURL("postgres://u@:5433/d?host=%2Ftmp%2Fpg").socketPath == "/tmp/pg/.s.PGSQL.5433")

        // A password may hold ':' and '@' even unencoded: the first ':' ends the user name,
        // the last '@' ends the user info.
        let tricky = try PostgresURL("postgres://u:a:b@c@h/d")
        #expect(tricky.password == "a:b@c" && tricky.host == "h")
    }

    @Test func redactsThePassword() throws {
        let url = try PostgresURL("postgres://alice:s3cret@db:5432/app")
        #expect(url.redacted == "postgres://alice:***@db:5432/app")
        #expect(try PostgresURL("postgres://alice@db/app").redacted == "postgres://alice@db:5432/app")
    }

    @Test(arguments: [
        "mysql://u:pw-secret@h/d", "postgres://u:pw-secret@h:0/d", "postgres://u:pw-secret@h:99999/d", "postgres://u:pw-secret@h:x/d",
        "postgres://u:pw-secret@h", "postgres://u:pw-secret@h/", "postgres://h/d", "postgres://:pw-secret@h/d",
        "postgres://u:pw-secret@h/d?sslmode=sometimes", "postgres://u:pw-secret@h/d?nope=1", "postgres://u:pw-secret@h/d?host=relative",
        "no scheme at all", "postgres://u:pw-secret@/d",
    ])
    func refusesBadURLsWithoutTheirPassword(_ string: String) async {
        let error = await #expect(throws: DocError.self) { try await PostgresServerStore.connect(url: string) }
        #expect(error?.code == .invalidArgument)
        #expect(error.map { !$0.description.contains("pw-secret") } == true, "\(String(describing: error))")
    }

    @Test func parsesNoticePayloads() {
        #expect(CommitNoticeFeed.parse("acme 1700000000000001") == CommitNotice(tenant: try! TenantID("acme"), version: SnapshotVersion(microseconds: 1_700_000_000_000_001)))
        #expect(CommitNoticeFeed.parse("my tenant 5")?.tenant.rawValue == "my tenant")
        #expect(CommitNoticeFeed.parse("acme") == nil)
        #expect(CommitNoticeFeed.parse("acme x") == nil)
        #expect(CommitNoticeFeed.parse(" 5") == nil)
    }
}
