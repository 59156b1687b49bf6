import ArgumentParser
import DocModel
import DocRules
import DocServer
import DocServerPostgres
import Foundation
import Logging

/// `docctl serve`: the backend on its embedded LevelDB store, or on a PostgreSQL database that
/// several instances share (`--store postgres://…`).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the backend (HTTP + WebSocket) on its embedded store or on PostgreSQL.",
        discussion: """
            Prints `listening on http://HOST:PORT` on stdout once it accepts connections; logs go
            to stderr. SIGINT or SIGTERM shut it down gracefully (queued writes are committed,
            clients are told to reconnect).

            Examples:
              docctl serve
              docctl serve --port 0 --data /tmp/doccache-data --log-level debug
              docctl serve --examples     (with the transfer and setTaxRate request handlers)
              docctl serve --rules Rules/examples/finance.rules
              docctl serve --indexes firestore.indexes.json
                          (composite indexes, built when the server starts; docs/server-queries.md)
              docctl serve --store postgres://doccache@127.0.0.1:5432/doccache --port 8081
                          (any number of instances on one database; docs/operations.md)
            """
    )

    @Option(help: "The address to bind (env DOCCTL_HOST; default 127.0.0.1).")
    var host: String?
    @Option(help: "The port; 0 picks a free one (env DOCCTL_PORT; default 8080).")
    var port: Int?
    @Option(help: "The data directory of the embedded store (env DOCCTL_DATA; default ~/.docctl/data).")
    var data: String?
    @Option(help: "A PostgreSQL store shared by every instance given the same URL: postgres://USER[:PASSWORD]@HOST[:PORT]/DB (env DOCCTL_STORE; default: the embedded store at --data).")
    var store: String?
    @Option(help: "With --store: hear of other instances' commits by polling every N ms instead of LISTEN/NOTIFY (env DOCCTL_STORE_POLL_MS; for CockroachDB and YugabyteDB).")
    var storePollMs: Int?
    @Option(help: "The token secret file (env DOCCTL_SECRET; default ~/.docctl/dev-secret, created when missing).")
    var secret: String?
    @Option(help: "Accept the tokens of an identity provider whose public keys (a JWKS) are at this https:// URL or file (env DOCCTL_JWKS); needs --issuer and --audience. Development (HS256) tokens are then refused unless --secret or DOCCTL_SECRET is given as well.")
    var jwks: String?
    @Option(help: "With --jwks: the exact 'iss' of the provider's tokens (env DOCCTL_ISSUER).")
    var issuer: String?
    @Option(help: "With --jwks: an accepted 'aud'; repeat for several (env DOCCTL_AUDIENCE, comma-separated).")
    var audience: [String] = []
    @Option(help: "With --jwks: the claim, a name or a dotted path, that carries the tenant (env DOCCTL_TENANT_CLAIM; default tenant).")
    var tenantClaim: String?
    @Option(help: "With --jwks: one tenant for every token, for a single-tenant deployment (env DOCCTL_TENANT); instead of --tenant-claim.")
    var tenant: String?
    @Option(help: "With --jwks: how far the provider's clock and this server's may disagree for exp, nbf and iat: 60s, 2m (env DOCCTL_CLOCK_SKEW; default 60s).")
    var clockSkew: DurationArgument?
    @Option(help: "With --jwks: a file that keeps the last key set read, used when the provider cannot be reached at start (env DOCCTL_JWKS_CACHE; default ~/.docctl/jwks-cache.json).")
    var jwksCache: String?
    @Option(help: "The rules file (env DOCCTL_RULES; default Rules/firestore.rules). Edits are picked up while running; a file that does not parse is not loaded (the last good rules stay).")
    var rules: String?
    @Option(help: "Composite indexes in Firestore's firestore.indexes.json format (env DOCCTL_INDEXES): built when the server starts if the store lacks them; they serve queries with equality filters and order-bys on several fields. On the embedded store, indexes no longer listed are dropped.")
    var indexes: String?
    @Flag(help: "Register the example request handlers, transfer and setTaxRate (docs/request-documents.md).")
    var examples = false
    @Flag(help: "Tell clients which rules denied them and why (development; make serve uses it). By default clients get \"Missing or insufficient permissions.\" with the operation and path, and the detail goes to the log.")
    var explainDenials = false
    @Option(help: "The attachment directory (env DOCCTL_ATTACHMENTS; default <data dir>/attachments, or ~/.docctl/attachments with --store).")
    var attachments: String?
    @Flag(help: "Keep attachments in the --store database instead of a directory (env DOCCTL_ATTACHMENTS_IN_STORE=1): for instances that share the database and no file system.")
    var attachmentsInStore = false
    @Option(help: "The largest attachment accepted, in bytes (env DOCCTL_MAX_ATTACHMENT_BYTES; default 104857600 = 100 MiB).")
    var maxAttachmentBytes: Int64?
    @Option(help: "How long an attachment no document refers to is kept after it was stored: 7d, 12h, 30m or seconds (env DOCCTL_ATTACHMENT_GRACE; default 7d); then maintenance deletes it.")
    var attachmentGrace: DurationArgument?
    @Option(help: "How long the outcome of each client batch is kept, so that a batch sent again after its answer was lost is answered from it instead of being applied twice: 24h or more, e.g. 7d (env DOCCTL_OUTCOME_RETENTION; default 24h). Set it above the longest time a device may stay offline; instances sharing a --store should agree.")
    var outcomeRetention: DurationArgument?

    @Option(help: "The largest limit a query listener may have (default 1000).")
    var maxListenLimit: Int = 1_000
    @Option(help: "Seconds between global snapshots to idle listeners (default 5).")
    var tickSeconds: Int = 5
    @Option(help: "trace, debug, info, notice, warning, error or critical (env DOCCTL_LOG_LEVEL; default info).")
    var logLevel: String?
    @Option(help: "Serve GET /metrics (Prometheus) on this port of --host instead of the main port, which then answers 404 for it; 0 picks a free one (env DOCCTL_METRICS_PORT).")
    var metricsPort: Int?

    func validate() throws {
        if let port, !(0...65_535).contains(port) { throw ValidationError("--port must be 0…65535") }
        if let metricsPort, !(0...65_535).contains(metricsPort) { throw ValidationError("--metrics-port must be 0…65535") }
        if maxListenLimit < 1 { throw ValidationError("--max-listen-limit must be at least 1") }
        if tickSeconds < 1 { throw ValidationError("--tick-seconds must be at least 1") }
        if let storePollMs, storePollMs < 10 { throw ValidationError("--store-poll-ms must be at least 10") }
        if let maxAttachmentBytes, maxAttachmentBytes < 1 { throw ValidationError("--max-attachment-bytes must be at least 1") }
        if attachmentsInStore, attachments != nil { throw ValidationError("give --attachments DIR or --attachments-in-store, not both") }
    }

    /// The identity provider that `--jwks` and its companions describe, or `nil` without `--jwks`.
    func identityProviderSettings() throws -> IdentityProvider? {
        let issuer = Environment.value(self.issuer, "DOCCTL_ISSUER")
        let audiences = audience.isEmpty
            ? (Environment.value(nil, "DOCCTL_AUDIENCE")?.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } ?? [])
            : audience
        let tenantClaim = Environment.value(self.tenantClaim, "DOCCTL_TENANT_CLAIM")
        let fixedTenant = Environment.value(self.tenant, "DOCCTL_TENANT")
        let skewText = Environment.value(clockSkew.map { String($0.seconds) }, "DOCCTL_CLOCK_SKEW")
        guard let jwks = Environment.value(self.jwks, "DOCCTL_JWKS") else {
            if issuer != nil || !audiences.isEmpty || tenantClaim != nil || fixedTenant != nil || skewText != nil {
                throw ValidationError("--issuer, --audience, --tenant-claim, --tenant and --clock-skew configure --jwks; give --jwks URL|FILE too")
            }
            return nil
        }
        guard let issuer else { throw ValidationError("--jwks needs --issuer: the exact 'iss' of the provider's tokens") }
        guard !audiences.isEmpty else { throw ValidationError("--jwks needs --audience: the 'aud' the provider's tokens carry for this app") }
        if tenantClaim != nil, fixedTenant != nil { throw ValidationError("give --tenant-claim or --tenant, not both") }
        var skew = Duration.seconds(60)
        if let skewText {
            guard let parsed = DurationArgument(argument: skewText) else {
                throw ValidationError("DOCCTL_CLOCK_SKEW must be a duration such as 60s or 2m, not \(skewText)")
            }
            skew = parsed.duration
        }
        do {
            return try IdentityProvider(
                keys: JWKSSource(jwks), issuer: issuer, audiences: audiences,
                tenant: fixedTenant.map(IdentityProvider.TenantSource.fixed) ?? .claim(tenantClaim ?? "tenant"),
                clockSkew: skew,
                cacheFile: Environment.value(jwksCache, "DOCCTL_JWKS_CACHE") ?? Environment.home + "/jwks-cache.json")
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// A duration option `flag` (or its environment variable `name`) in microseconds,
    /// `fallback` when neither is given; refused when it is not a duration or below `atLeast`
    /// seconds.
    static func durationMicros(_ option: DurationArgument?, _ flag: String, _ name: String, default fallback: Int64,
                               atLeast minimum: (seconds: Int64, text: String)? = nil) throws -> Int64 {
        guard let text = Environment.value(option.map(\.description), name) else { return fallback }
        guard let duration = DurationArgument(argument: text), duration.seconds <= Int64.max / 1_000_000 else {
            throw ValidationError("\(flag) (\(name)) must be a duration such as 7d, 12h, 30m or 45s, not \(text)")
        }
        if let minimum, duration.seconds < minimum.seconds {
            throw ValidationError("\(flag) (\(name)) must be at least \(minimum.text), not \(text)")
        }
        return duration.seconds * 1_000_000
    }

    /// The composite indexes of the configuration file at `path` (none without one).
    static func compositeIndexes(at path: String?) throws -> [CompositeIndex] {
        guard let path else { return [] }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw CommandFailure(code: "failedPrecondition", message: "cannot read the index configuration \(path): \(error.localizedDescription)")
        }
        do {
            return try CompositeIndex.configuration(json: text)
        } catch {
            throw CommandFailure(exitCode: CommandFailure.usage, code: error.code.name, message: "the index configuration \(path): \(error.message)")
        }
    }

    func run() async throws {
        let levelName = Environment.value(logLevel, "DOCCTL_LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: levelName) else {
            throw ValidationError("--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "doccache.server")
        let host = Environment.value(self.host, "DOCCTL_HOST") ?? "127.0.0.1"
        let portText = Environment.value(port.map(String.init), "DOCCTL_PORT") ?? "8080"
        guard let port = Int(portText), (0...65_535).contains(port) else { throw ValidationError("DOCCTL_PORT must be 0…65535") }
        let metricsPortText = Environment.value(metricsPort.map(String.init), "DOCCTL_METRICS_PORT")
        let metricsPort: Int?
        if let metricsPortText {
            guard let value = Int(metricsPortText), (0...65_535).contains(value) else {
                throw ValidationError("DOCCTL_METRICS_PORT must be 0…65535")
            }
            metricsPort = value
        } else {
            metricsPort = nil
        }
        let dataDirectory = Environment.value(data, "DOCCTL_DATA") ?? Environment.home + "/data"
        let storeURL = Environment.value(self.store, "DOCCTL_STORE")
        let pollText = Environment.value(storePollMs.map(String.init), "DOCCTL_STORE_POLL_MS")
        let pollMilliseconds: Int?
        if let pollText {
            guard let ms = Int(pollText), ms >= 10 else { throw ValidationError("DOCCTL_STORE_POLL_MS must be a number of milliseconds, at least 10") }
            guard storeURL != nil else { throw ValidationError("--store-poll-ms needs --store postgres://…") }
            pollMilliseconds = ms
        } else {
            pollMilliseconds = nil
        }

        let attachmentsInStore = self.attachmentsInStore || Environment.value(nil, "DOCCTL_ATTACHMENTS_IN_STORE") == "1"
        if attachmentsInStore, storeURL == nil {
            throw ValidationError("--attachments-in-store keeps attachments in the --store database: give --store postgres://… too")
        }
        let attachmentDirectory = Environment.value(attachments, "DOCCTL_ATTACHMENTS")
            ?? (storeURL == nil ? dataDirectory + "/attachments" : Environment.home + "/attachments")
        let maxAttachmentText = Environment.value(maxAttachmentBytes.map(String.init), "DOCCTL_MAX_ATTACHMENT_BYTES")
        let maxAttachmentSize: Int64
        if let maxAttachmentText {
            guard let bytes = Int64(maxAttachmentText), bytes >= 1 else {
                throw ValidationError("DOCCTL_MAX_ATTACHMENT_BYTES must be a number of bytes, at least 1")
            }
            maxAttachmentSize = bytes
        } else {
            maxAttachmentSize = FileBlobStore.defaultMaxSize
        }

        let attachmentGraceMicros = try Self.durationMicros(
            attachmentGrace, "--attachment-grace", "DOCCTL_ATTACHMENT_GRACE", default: AttachmentSettings.defaultUnreferencedGraceMicros)
        let outcomeRetentionMicros = try Self.durationMicros(
            outcomeRetention, "--outcome-retention", "DOCCTL_OUTCOME_RETENTION", default: ServerConfiguration().outcomeRetentionMicros,
            atLeast: (24 * 3_600, "24h: the protocol promises a day"))

        let compositeIndexes = try Self.compositeIndexes(at: Environment.value(indexes, "DOCCTL_INDEXES"))
        let identityProvider = try identityProviderSettings()
        // With an identity provider, development tokens are accepted only when a secret is asked for.
        let secretPath = Environment.value(self.secret, "DOCCTL_SECRET")
        let acceptsDevelopmentTokens = identityProvider == nil || secretPath != nil

        let secret: DevelopmentSecret?
        let store: any ServerStore
        let storeDescription: String
        do {
            if acceptsDevelopmentTokens {
                let loaded = try DevelopmentSecret.loadOrCreate(at: secretPath)
                if loaded.wasCreated { logger.notice("created a development secret", metadata: ["path": "\(loaded.path)"]) }
                secret = loaded
            } else {
                secret = nil
            }
            if let storeURL {
                var options = PostgresServerStore.Options(logger: logger, compositeIndexes: compositeIndexes)
                if let pollMilliseconds { options.notices = .poll(milliseconds: pollMilliseconds) }
                store = try await PostgresServerStore.connect(url: storeURL, options: options)
                storeDescription = PostgresServerStore.redacted(storeURL)
            } else {
                try Directories.create(dataDirectory)
                let embedded = try LevelDBServerStore.open(directory: dataDirectory, options: .init(compositeIndexes: compositeIndexes))
                let changes = embedded.compositeIndexChanges
                for id in changes.built {
                    logger.info("composite index built", metadata: ["index": "\(id)", "documents read": "\(changes.documentsRead)"])
                }
                for id in changes.dropped { logger.info("composite index dropped", metadata: ["index": "\(id)"]) }
                store = embedded
                storeDescription = dataDirectory
            }
        } catch {
            throw CommandFailure(error)
        }
        let rulesPath = Environment.value(self.rules, "DOCCTL_RULES") ?? "Rules/firestore.rules"
        let ruleSet: RuleSet
        do {
            ruleSet = try RuleSet.load(path: rulesPath)
        } catch {
            await store.close()
            throw CommandFailure(code: "failedPrecondition",
                message: "cannot load the rules \(rulesPath): \(error) (run from the repository root, or pass --rules FILE)")
        }
        let blobs: any BlobStore
        let attachmentsDescription: String
        do {
            if attachmentsInStore, let postgres = store as? PostgresServerStore {
                blobs = try PostgresBlobStore(store: postgres, maxSize: maxAttachmentSize)
                attachmentsDescription = "in the store's database"
            } else {
                blobs = try FileBlobStore(root: attachmentDirectory, maxSize: maxAttachmentSize)
                attachmentsDescription = attachmentDirectory
            }
        } catch {
            await store.close()
            throw CommandFailure(error)
        }
        var configuration = ServerConfiguration()
        configuration.maxListenLimit = maxListenLimit
        configuration.outcomeRetentionMicros = outcomeRetentionMicros
        configuration.rules = ruleSet
        configuration.explainDenials = explainDenials
        configuration.attachments = AttachmentSettings(store: blobs, unreferencedGraceMicros: attachmentGraceMicros)
        let core = DocServerCore(store: store, configuration: configuration, logger: logger,
                                 accessLogger: Logger(label: DocServerCore.accessLoggerLabel))
        if examples { core.requests.registerExamples() }
        let verifier: TokenVerifier
        do {
            if let identityProvider {
                verifier = try await TokenVerifier(identityProvider: identityProvider, secret: secret, logger: logger)
                logger.info("accepting the identity provider's tokens", metadata: [
                    "jwks": "\(identityProvider.keys)", "issuer": "\(identityProvider.issuer)",
                    "audiences": "\(identityProvider.audiences.joined(separator: ","))", "tenant": "\(identityProvider.tenant)",
                    "developmentTokens": "\(secret == nil ? "refused" : "accepted")"])
            } else if let secret {
                verifier = await TokenVerifier(secret: secret)
            } else {
                throw DocError(.internal, "no way to verify tokens")
            }
        } catch {
            await store.close()
            throw CommandFailure(error)
        }
        let server = DocServerHTTP(
            core: core, verifier: verifier,
            settings: HTTPServerSettings(host: host, port: port, tickInterval: .seconds(tickSeconds), metricsPort: metricsPort),
            logger: logger)
        logger.info("starting", metadata: ["store": "\(storeDescription)", "secret": "\(secret?.path ?? "none (identity provider only)")", "rules": "\(rulesPath)",
                                           "attachments": "\(attachmentsDescription)",
                                           "outcomeRetention": "\(configuration.outcomeRetentionMicros / 1_000_000)s"])
        let watcher = RulesFileWatcher(path: rulesPath, core: core, logger: logger)
        let watching = Task { await watcher.run() }
        defer { watching.cancel() }
        // The embedded store's admin socket (DIR/admin.sock): `docctl backup` reaches the
        // running server through it. Shut down gracefully before the store closes (cancelling
        // its task would make Hummingbird log the stop as errors).
        let admin = (store as? LevelDBServerStore).map { leveldb in
            AdminSocketServer(store: leveldb, path: AdminSocketServer.path(dataDirectory: dataDirectory), logger: logger)
        }
        let adminSocket = admin.map { admin in Task { await admin.run() } }
        do {
            try await server.run { address in Output.line(address.description) }
        } catch {
            await admin?.shutdown()
            await adminSocket?.value
            await store.close()
            throw CommandFailure(code: "unavailable", message: "cannot serve on \(host):\(port): \(error)")
        }
        await admin?.shutdown()
        await adminSocket?.value
        await store.close()
        logger.info("stopped")
    }
}
