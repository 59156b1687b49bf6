public import DocModel

extension ServerMessage {
    /// `targetChange`: the state of some targets changed; with no target ids it concerns every
    /// target of the connection.
    ///
    /// ```json
    /// {"type": "targetChange", "state": "current", "targetIds": [2], "resumeToken": "AQ…"}
    /// {"type": "targetChange", "state": "noChange", "targetIds": [], "resumeToken": "AQ…", "snapshotVersion": 1714557600000000}
    /// {"type": "targetChange", "state": "removed", "targetIds": [4],
    ///  "cause": {"code": 3, "name": "invalidArgument", "message": "…"}}
    /// ```
    /// A `noChange` without target ids and with a `snapshotVersion` is a *global snapshot*:
    /// everything sent before it is consistent at that version, and its resume token applies
    /// to every target.
    public struct TargetChange: Sendable, Hashable, Codable, WireMessage {
        /// What happened to the targets.
        public enum State: String, Sendable, Hashable, CaseIterable {
            /// Nothing changed (a resume token or a global snapshot follows).
            case noChange
            /// The server acknowledged `addTarget`.
            case added
            /// The target was removed: acknowledging `removeTarget`, or refused with a `cause`.
            case removed
            /// The target's documents are complete as of the resume token.
            case current
            /// The server cannot resume the target: the client forgets its documents; the
            /// server sends the current ones, then `current`.
            case reset
        }

        /// What happened.
        public var state: State
        /// The targets concerned; empty for all of them.
        public var targetIDs: [Int32]
        /// Where the targets now stand, to resume from later.
        public var resumeToken: [UInt8]?
        /// Why a target was removed, when the server refused it.
        public var cause: DocError?
        /// The version everything sent so far is consistent at (global `noChange` only).
        public var snapshotVersion: SnapshotVersion?

        /// Creates the message as given; a decoder refuses a `cause` unless `state` is
        /// ``State/removed``.
        public init(
            state: State, targetIDs: [Int32], resumeToken: [UInt8]? = nil, cause: DocError? = nil,
            snapshotVersion: SnapshotVersion? = nil
        ) {
            self.state = state
            self.targetIDs = targetIDs
            self.resumeToken = resumeToken
            self.cause = cause
            self.snapshotVersion = snapshotVersion
        }

        /// Whether this is a global snapshot (see the type's description).
        public var isGlobalSnapshot: Bool { state == .noChange && targetIDs.isEmpty && snapshotVersion != nil }

        static let wireType = "targetChange"
        static let wireFieldNames: Set<String> = ["state", "targetIds", "resumeToken", "cause", "snapshotVersion"]

        var wireFields: [(String, Value?)] {
            [("state", .string(state.rawValue)), ("targetIds", Wire.targetIDs(targetIDs)),
             ("resumeToken", Wire.bytes(resumeToken)), ("cause", cause?.wireValue),
             ("snapshotVersion", snapshotVersion.map(Wire.version))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            let name = try object.string("state")
            guard let state = State(rawValue: name) else {
                throw Wire.error("unknown target state \"\(name)\" (expected \(State.allCases.map(\.rawValue).joined(separator: ", ")))",
                                 at: object.at("state"))
            }
            self.state = state
            targetIDs = try object.targetIDs("targetIds")
            guard targetIDs.count <= limits.maxTargetIDs else {
                throw Wire.error("at most \(limits.maxTargetIDs) target ids", at: object.at("targetIds"))
            }
            resumeToken = try object.optionalBytes("resumeToken", maxBytes: limits.maxTokenBytes)
            cause = try object.optionalValue("cause").map { v throws(DocError) in try DocError(wire: v, at: object.at("cause")) }
            if cause != nil && state != .removed {
                throw Wire.error("only a \"removed\" target change has a cause", at: object.at("cause"))
            }
            snapshotVersion = try object.optionalVersion("snapshotVersion")
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }

    /// `existenceFilter`: how many documents match a target at the next global snapshot. A
    /// client that counts a different number missed removals: it drops the documents the
    /// ``bloomFilter`` rules out (and confirms them one by one), or, without a usable filter or
    /// when the count still differs, listens again from scratch.
    ///
    /// ```json
    /// {"type": "existenceFilter", "targetId": 2, "count": 12}
    /// {"type": "existenceFilter", "targetId": 2, "count": 2,
    ///  "bloomFilter": {"bits": {"bitmap": "AhAAApAAAIAEBIAABA==", "padding": 4}, "hashCount": 10}}
    /// ```
    public struct ExistenceFilter: Sendable, Hashable, Codable, WireMessage {
        /// The target counted.
        public var targetID: Int32
        /// The number of documents in the target.
        public var count: Int
        /// The names of the documents in the target, as a bloom filter (Firestore's
        /// `unchanged_names`); `nil` when the server sends none.
        public var bloomFilter: BloomFilter?

        /// Creates the message as given; a decoder accepts a `count` in 0…`Int32.max`.
        public init(targetID: Int32, count: Int, bloomFilter: BloomFilter? = nil) {
            self.targetID = targetID
            self.count = count
            self.bloomFilter = bloomFilter
        }

        static let wireType = "existenceFilter"
        static let wireFieldNames: Set<String> = ["targetId", "count", "bloomFilter"]
        var wireFields: [(String, Value?)] {
            [("targetId", .integer(Int64(targetID))), ("count", .integer(Int64(count))), ("bloomFilter", bloomFilter?.wireValue)]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            targetID = try object.targetID("targetId")
            count = try object.int("count", in: 0...Int64(Int32.max))
            bloomFilter = try object.optionalObject("bloomFilter").map { filter throws(DocError) in
                try BloomFilter(wire: filter, limits: limits)
            }
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}

extension ServerMessage.ExistenceFilter {
    /// A bloom filter of document names, in Firestore's form: `bitCount = bitmap.count * 8 -
    /// padding` bits, bit `i` being bit `i % 8` (least significant first) of byte `i / 8`; a
    /// name is in the filter when, with `h1` and `h2` the two little-endian 64-bit halves of
    /// the MD5 digest of its UTF-8 bytes, bits `(h1 + i * h2) mod bitCount` (unsigned 64-bit
    /// arithmetic, wrapping) are set for every `i` in `0..<hashCount`. The names are
    /// ``documentName(of:database:)``.
    ///
    /// ```json
    /// {"bits": {"bitmap": "AhAAApAAAIAEBIAABA==", "padding": 4}, "hashCount": 10}
    /// ```
    ///
    /// The frame decoder checks the schema and ranges (padding 0…7, at most
    /// ``FrameLimits/maxBloomFilterBytes`` bytes and ``FrameLimits/maxBloomFilterHashCount``
    /// hashes); `padding` and `hashCount` default to 0 when absent, as in Firestore's JSON. A
    /// filter whose fields do not fit together (a bitmap with no hashes, padding without a
    /// bitmap) is still a valid frame: the client does not use it and listens again instead.
    public struct BloomFilter: Sendable, Hashable {
        /// The bits.
        public var bitmap: [UInt8]
        /// How many of the last byte's high bits are not part of the filter (0…7).
        public var padding: Int
        /// How many bits each name sets.
        public var hashCount: Int

        /// Creates a filter as given (not checked; see the type's description for the decoder's
        /// ranges).
        public init(bitmap: [UInt8], padding: Int, hashCount: Int) {
            self.bitmap = bitmap
            self.padding = padding
            self.hashCount = hashCount
        }

        var wireValue: Value {
            Wire.object([
                ("bits", Wire.object([("bitmap", Wire.bytes(bitmap)), ("padding", .integer(Int64(padding)))])),
                ("hashCount", .integer(Int64(hashCount))),
            ])
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            try object.allowOnly(["bits", "hashCount"])
            let bits = try object.object("bits")
            try bits.allowOnly(["bitmap", "padding"])
            bitmap = try bits.optionalBytes("bitmap", maxBytes: limits.maxBloomFilterBytes) ?? []
            padding = try bits.optionalInt("padding", in: 0...7) ?? 0
            hashCount = try object.optionalInt("hashCount", in: 0...Int64(limits.maxBloomFilterHashCount)) ?? 0
        }
    }

    /// The name under which a document is entered in a ``BloomFilter``: Firestore's resource
    /// name, `"<database>/documents/<path>"`. Every tenant's database is hashed under the same
    /// ``databaseName`` (a connection serves one tenant, so names need not tell tenants
    /// apart).
    public static func documentName(of key: DocumentKey, database: String = databaseName) -> String {
        ResourceName.of(key.path, database: database)
    }

    /// The database part of the names in bloom filters (``ResourceName/defaultDatabase``).
    public static let databaseName = ResourceName.defaultDatabase
}
