public import DocProtocol
public import DocRules

/// The server core's settings.
public struct ServerConfiguration: Sendable {
    /// The largest limit a query listener may have (default 1,000). Query targets without a
    /// limit or with a larger one are refused with `invalidArgument`; document targets need none.
    public var maxListenLimit: Int
    /// How long batch outcomes are kept for deduplication, in microseconds (default 24 h; the
    /// protocol promises at least that). Each client's latest outcome is kept for good: a batch
    /// sent again after its own was pruned is then refused, not applied again
    /// (``CommitProcessor/process(batch:mutations:uid:access:logger:fromClient:)``).
    public var outcomeRetentionMicros: Int64
    /// How long change log entries are kept for resuming listeners, in microseconds (default
    /// 24 h). A resume token older than that gets a `reset`, unless the target can be resumed
    /// from its documents with a bloom filter (``bloomFilterFalsePositiveRate``).
    public var changeLogRetentionMicros: Int64
    /// The most change log entries a resume reads before it prefers a `reset` (default 10,000).
    public var maxResumeChanges: Int
    /// The most frames buffered for one connection before it is cut off (default 100,000).
    public var outboxCapacity: Int
    /// The limits on incoming frames.
    public var frameLimits: FrameLimits
    /// The clock of commit versions.
    public var clock: ServerClock
    /// The security rules the server starts with (e.g. `RuleSet.load(path:
    /// "Rules/firestore.rules")`): every write, read and listen target is authorized against
    /// them. `nil` (the default): no rules are enforced, only tenant isolation — for tests and
    /// tools; a served backend always has rules. ``DocServerCore/reloadRules(from:)`` and
    /// ``DocServerCore/replaceRules(with:)`` change them while the server runs.
    public var rules: RuleSet?
    /// Where attachments are stored and who may reach them (docs/attachments.md). `nil` (the
    /// default): the server stores no attachments; its `/attachments` endpoints answer 501
    /// and a write that refers to an attachment is refused with `failedPrecondition`.
    public var attachments: AttachmentSettings?
    /// Whether a `permissionDenied` tells the client which rules were tried and why they
    /// failed (for development; `docctl serve --explain-denials`, which `make serve` uses).
    /// Off by default: clients get "Missing or insufficient permissions." with the operation
    /// and path, as from Firestore, and the detail goes to the server log.
    public var explainDenials: Bool = false
    /// The false-positive rate of the bloom filters sent with existence filters (default
    /// 0.01: about 9.6 bits per document of the target, 7 hashes). A resumed target's
    /// existence filter carries a bloom filter of the target's documents, with which a client
    /// that missed removals drops just those documents instead of listening again from
    /// scratch; with a filter, a resume token the change log no longer reaches is resumed
    /// from the documents themselves (docs/protocol.md, "Adding a target"). `nil`: no bloom
    /// filters, and such tokens get a `reset`.
    public var bloomFilterFalsePositiveRate: Double? = 0.01
    /// The most listen targets one connection may hold at once (default 1,000). Every commit
    /// of the tenant looks at each connection's targets, and each target holds its window in
    /// memory, so one connection must not add them without bound: a target beyond this is
    /// removed at once with `resourceExhausted`. A client has one target per listener (and
    /// per document it resolves in limbo).
    public var maxTargetsPerConnection = 1_000

    /// Creates settings; every parameter defaults to the value documented on its property.
    /// ``explainDenials``, ``bloomFilterFalsePositiveRate`` and ``maxTargetsPerConnection`` are
    /// not parameters: set them on the value.
    public init(
        maxListenLimit: Int = 1_000,
        outcomeRetentionMicros: Int64 = 24 * 3_600 * 1_000_000,
        changeLogRetentionMicros: Int64 = 24 * 3_600 * 1_000_000,
        maxResumeChanges: Int = 10_000,
        outboxCapacity: Int = 100_000,
        frameLimits: FrameLimits = .default,
        clock: ServerClock = .system,
        rules: RuleSet? = nil,
        attachments: AttachmentSettings? = nil
    ) {
        self.maxListenLimit = maxListenLimit
        self.outcomeRetentionMicros = outcomeRetentionMicros
        self.changeLogRetentionMicros = changeLogRetentionMicros
        self.maxResumeChanges = maxResumeChanges
        self.outboxCapacity = outboxCapacity
        self.frameLimits = frameLimits
        self.clock = clock
        self.rules = rules
        self.attachments = attachments
    }
}
