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
    /// client that counts a different number missed removals and listens again from scratch.
    ///
    /// ```json
    /// {"type": "existenceFilter", "targetId": 2, "count": 12}
    /// ```
    public struct ExistenceFilter: Sendable, Hashable, Codable, WireMessage {
        /// The target counted.
        public var targetID: Int32
        /// The number of documents in the target.
        public var count: Int

        public init(targetID: Int32, count: Int) {
            self.targetID = targetID
            self.count = count
        }

        static let wireType = "existenceFilter"
        static let wireFieldNames: Set<String> = ["targetId", "count"]
        var wireFields: [(String, Value?)] { [("targetId", .integer(Int64(targetID))), ("count", .integer(Int64(count)))] }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            targetID = try object.targetID("targetId")
            count = try object.int("count", in: 0...Int64(Int32.max))
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}
