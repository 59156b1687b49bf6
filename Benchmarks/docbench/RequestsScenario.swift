import DocCache
import DocModel
import DocRules
import DocServer
import Foundation

/// `requests`: the `transfer` example handler on the embedded store. An admin store (token
/// claim `admin: true`) seeds `accounts` accounts; then `clients` client stores, each with its
/// own token, directory and WebSocket connections, submit transfers between them concurrently,
/// each client one at a time (submit, wait for `applied`, next). A sample is the time from
/// `submitRequest` to the `applied` status of the request's `RequestHandle`. The server runs
/// with the default rules (`Rules/firestore.rules`, when found relative to the current
/// directory). Also reports the throughput, requests applied per second over the timed phase,
/// as a second line (`requests-throughput`, unit `per_s`). Fails when a transfer is not
/// applied, or when afterwards the balances do not add up or the ledger has not one entry per
/// transfer. `DOCBENCH_REQUEST_CLIENTS` overrides the number of clients (1: the latency of one
/// request with nothing else going on).
func requests(transfers: Int, accounts: Int = 100) async throws -> Result {
    let clients = try environmentCount("DOCBENCH_REQUEST_CLIENTS", default: 10, minimum: 1)
    var configuration = ServerConfiguration()
    let rulesPath = "Rules/firestore.rules"
    if FileManager.default.fileExists(atPath: rulesPath) {
        configuration.rules = try RuleSet.load(path: rulesPath)
    } else {
        FileHandle.standardError.write("docbench: requests: no \(rulesPath) in the current directory; the server runs without rules\n".data(using: .utf8)!)
    }
    let server = try await BenchServer(configuration: configuration)
    server.core.requests.registerExamples()
    var directories: [String] = []
    var stores: [DocumentStore] = []
    func cleanUp() async {
        for store in stores { await store.close() }
        await server.stop()
        for directory in directories { try? FileManager.default.removeItem(atPath: directory) }
    }
    do {
        let initialBalance: Int64 = 1_000_000
        // Seed the accounts as an admin.
        let adminDirectory = temporaryDirectory("requests-admin")
        directories.append(adminDirectory)
        let admin = try await DocumentStore.open(
            directory: adminDirectory, tenant: "bench", user: "admin",
            server: try server.endpoint(uid: "admin", claims: ["admin": true]))
        stores.append(admin)
        for a in 0..<accounts {
            _ = try await admin.document(accountPath(a)).setData([
                "balance": .value(.integer(initialBalance)), "owner": .value(.string("owner \(a)")), "currency": "EUR",
            ])
        }
        try await admin.waitForPendingWrites()

        // The clients, connected: one transfer each, not timed.
        var clientStores: [DocumentStore] = []
        for c in 0..<clients {
            let directory = temporaryDirectory("requests-client")
            directories.append(directory)
            let store = try await DocumentStore.open(
                directory: directory, tenant: "bench", user: "client-\(c)", server: try server.endpoint(uid: "client-\(c)"))
            stores.append(store)
            clientStores.append(store)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (c, store) in clientStores.enumerated() {
                group.addTask { _ = try await transfer(store, client: c, number: -1, accounts: accounts) }
            }
            try await group.waitForAll()
        }

        // The timed phase: every client submits its share, one at a time.
        let start = ContinuousClock.now
        let samples = try await withThrowingTaskGroup(of: [Double].self) { group in
            for (c, store) in clientStores.enumerated() {
                let share = transfers / clients + (c < transfers % clients ? 1 : 0)
                group.addTask {
                    var latencies: [Double] = []
                    latencies.reserveCapacity(share)
                    for k in 0..<share { latencies.append(try await transfer(store, client: c, number: k, accounts: accounts)) }
                    return latencies
                }
            }
            var all: [Double] = []
            for try await latencies in group { all += latencies }
            return all
        }
        let elapsed = micros(start.duration(to: .now))

        try await verifyLedger(server, accounts: accounts, initialBalance: initialBalance, transfers: transfers + clients)
        await cleanUp()
        return Result(samples: samples, peer: nil, peerSamples: nil,
                      figures: [Figure(scenario: "requests-throughput", unit: "per_s", value: Double(samples.count) / (elapsed / 1e6))])
    } catch {
        await cleanUp()
        throw error
    }
}

private func accountPath(_ a: Int) -> String { "accounts/acct\(String(format: "%04d", a))" }

/// Submits one transfer of 1 between two accounts chosen from `client` and `number` and waits
/// for `applied`; returns the latency in µs.
private func transfer(_ store: DocumentStore, client: Int, number: Int, accounts: Int) async throws -> Double {
    let from = (client * 37 + (number + 1) * 13) % accounts
    let to = (from + 1 + (number + 1 + client) % (accounts - 1)) % accounts
    let start = ContinuousClock.now
    let handle = try await store.submitRequest(type: "transfer", params: [
        "from": .string(accountPath(from)), "to": .string(accountPath(to)), "amount": 1,
    ])
    let status = try await handle.result()
    let latency = micros(start.duration(to: .now))
    guard case .applied = status else {
        throw DocError(.internal, "requests: transfer \(handle.id) from \(accountPath(from)) to \(accountPath(to)) ended \(status)")
    }
    return latency
}

/// The balances still add up and the ledger has one entry per applied transfer (read from the
/// server's store directly).
private func verifyLedger(_ server: BenchServer, accounts: Int, initialBalance: Int64, transfers: Int) async throws {
    let tenant = try await server.store.tenant(TenantID("bench"))
    let stored = try await tenant.query(try DocModel.Query(collection: "accounts").toTarget(), limit: nil).documents
    var total: Int64 = 0
    for account in stored {
        if case .integer(let balance)? = account.data["balance"] { total += balance }
    }
    guard stored.count == accounts, total == Int64(accounts) * initialBalance else {
        throw DocError(.dataLoss, "requests: \(stored.count) accounts holding \(total) in total, expected \(accounts) holding \(Int64(accounts) * initialBalance)")
    }
    let ledger = try await tenant.query(try DocModel.Query(collection: "ledger").toTarget(), limit: nil).documents
    guard ledger.count == transfers else {
        throw DocError(.dataLoss, "requests: \(ledger.count) ledger entries for \(transfers) applied transfers")
    }
}
