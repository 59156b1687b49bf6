public import DocModel

extension ServerMessage {
    /// `documentChange`: a document's new state, the targets it now matches (`targetIds`) and
    /// those it no longer matches (`removedTargetIds`). A document that became a tombstone is
    /// sent with its new data and removed from the targets that hide tombstones.
    ///
    /// ```json
    /// {"type": "documentChange",
    ///  "document": {"path": "rooms/r1/messages/m1", "fields": {"text": "hi", "sentAt": {"$timestamp": "2024-05-01T12:00:00Z"}},
    ///               "version": 1714564800000000, "createTime": 1714564800000000},
    ///  "targetIds": [2], "removedTargetIds": []}
    /// ```
    public struct DocumentChange: Sendable, Hashable, Codable, WireMessage {
        /// The document's new state (its `version` is the commit that changed it).
        public var document: Document
        /// The targets the document now matches: it entered them or changed in them.
        public var targetIDs: [Int32]
        /// The targets the document left.
        public var removedTargetIDs: [Int32]

        /// Creates the message as given; a decoder accepts at most ``FrameLimits/maxTargetIDs``
        /// target ids in both lists together.
        public init(document: Document, targetIDs: [Int32], removedTargetIDs: [Int32] = []) {
            self.document = document
            self.targetIDs = targetIDs
            self.removedTargetIDs = removedTargetIDs
        }

        static let wireType = "documentChange"
        static let wireFieldNames: Set<String> = ["document", "targetIds", "removedTargetIds"]
        var wireFields: [(String, Value?)] {
            [("document", document.wireValue), ("targetIds", Wire.targetIDs(targetIDs)),
             ("removedTargetIds", Wire.targetIDs(removedTargetIDs))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            document = try Document(wire: try object.value("document"), at: object.at("document"))
            targetIDs = try object.targetIDs("targetIds")
            removedTargetIDs = try object.targetIDs("removedTargetIds")
            guard targetIDs.count + removedTargetIDs.count <= limits.maxTargetIDs else {
                throw Wire.error("at most \(limits.maxTargetIDs) target ids", at: object.path)
            }
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }

    /// `documentDelete`: the document was deleted at `version` (a hard delete) and leaves the
    /// listed targets.
    ///
    /// ```json
    /// {"type": "documentDelete", "path": "rooms/r1/messages/m1", "version": 1714564900000000, "removedTargetIds": [2]}
    /// ```
    public struct DocumentDelete: Sendable, Hashable, Codable, WireMessage {
        /// The document.
        public var key: DocumentKey
        /// The commit version of the delete.
        public var version: SnapshotVersion
        /// The targets the document left.
        public var removedTargetIDs: [Int32]

        /// Creates the message as given; a decoder accepts at most ``FrameLimits/maxTargetIDs``
        /// removed target ids.
        public init(key: DocumentKey, version: SnapshotVersion, removedTargetIDs: [Int32]) {
            self.key = key
            self.version = version
            self.removedTargetIDs = removedTargetIDs
        }

        static let wireType = "documentDelete"
        static let wireFieldNames: Set<String> = ["path", "version", "removedTargetIds"]
        var wireFields: [(String, Value?)] {
            [("path", .string(key.path.canonicalString)), ("version", Wire.version(version)),
             ("removedTargetIds", Wire.targetIDs(removedTargetIDs))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            key = try Wire.documentKey(try object.string("path"), at: object.at("path"))
            version = try object.version("version")
            removedTargetIDs = try object.targetIDs("removedTargetIds")
            guard removedTargetIDs.count <= limits.maxTargetIDs else {
                throw Wire.error("at most \(limits.maxTargetIDs) target ids", at: object.at("removedTargetIds"))
            }
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }

    /// `documentRemove`: the document left the listed targets without changing (e.g. pushed
    /// out of a limit window by another document). The client may keep its copy.
    ///
    /// ```json
    /// {"type": "documentRemove", "path": "rooms/r1/messages/m0", "removedTargetIds": [2]}
    /// ```
    public struct DocumentRemove: Sendable, Hashable, Codable, WireMessage {
        /// The document.
        public var key: DocumentKey
        /// The version at which it left, when known.
        public var version: SnapshotVersion?
        /// The targets the document left.
        public var removedTargetIDs: [Int32]

        /// Creates the message as given; `version` may be left out when unknown.
        public init(key: DocumentKey, version: SnapshotVersion? = nil, removedTargetIDs: [Int32]) {
            self.key = key
            self.version = version
            self.removedTargetIDs = removedTargetIDs
        }

        static let wireType = "documentRemove"
        static let wireFieldNames: Set<String> = ["path", "version", "removedTargetIds"]
        var wireFields: [(String, Value?)] {
            [("path", .string(key.path.canonicalString)), ("version", version.map(Wire.version)),
             ("removedTargetIds", Wire.targetIDs(removedTargetIDs))]
        }

        init(wire object: WireObject, limits: FrameLimits) throws(DocError) {
            key = try Wire.documentKey(try object.string("path"), at: object.at("path"))
            version = try object.optionalVersion("version")
            removedTargetIDs = try object.targetIDs("removedTargetIds")
            guard removedTargetIDs.count <= limits.maxTargetIDs else {
                throw Wire.error("at most \(limits.maxTargetIDs) target ids", at: object.at("removedTargetIds"))
            }
        }

        public init(from decoder: any Decoder) throws { self = try WireCoding.decode(Self.self, from: decoder) }
        public func encode(to encoder: any Encoder) throws { try WireCoding.encode(self, to: encoder) }
    }
}
