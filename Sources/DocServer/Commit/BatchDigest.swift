public import DocModel
internal import DocProtocol

/// A 64-bit digest of a batch's mutations.
///
/// Stored with each batch outcome: a batch re-sent with the same `(clientId, batchId)` but
/// other mutations (a client that lost its state and reuses ids) is refused instead of being
/// answered with the outcome of a different batch. It detects mistakes; it is not a
/// cryptographic hash.
///
/// The digest is FNV-1a over the mutations' contents, walked in place (``MutationHasher``):
/// nothing is encoded first. Outcomes stored by earlier versions hold another digest,
/// FNV-1a over the batch's `write` frame in canonical JSON (``jsonDigest(of:)``), which cost a
/// second encoding of every batch. ``matches(stored:digest:mutations:)`` accepts either, so a
/// batch stored then and re-sent now is still recognised; only such a batch pays for the JSON.
///
/// Both digests are stored data: changing how either is computed makes re-sent batches look
/// like other batches. The tests pin both.
public enum BatchDigest {
    /// The digest of `mutations`.
    public static func of(_ mutations: [Mutation]) -> UInt64 {
        var hasher = MutationHasher()
        hasher.count(mutations.count)
        for mutation in mutations { hasher.mutation(mutation) }
        return hasher.state
    }

    /// Whether an outcome's `stored` digest was made from `mutations`, whose digest
    /// (``of(_:)``) is `digest`: by the current digest or by the JSON one stored before it.
    public static func matches(stored: UInt64, digest: UInt64, mutations: [Mutation]) -> Bool {
        stored == digest || stored == jsonDigest(of: mutations)
    }

    /// The digest stored before ``of(_:)``: FNV-1a over the canonical JSON of a `write` frame
    /// (client id `-`, batch id 0) holding `mutations`.
    static func jsonDigest(of mutations: [Mutation]) -> UInt64 {
        var hasher = MutationHasher()
        for byte in FrameEncoder.encode(.write(.init(clientID: "-", batchID: 0, mutations: mutations))) {
            hasher.byte(byte)
        }
        return hasher.state
    }
}

/// FNV-1a (64-bit) over a tagged walk of mutations and values.
///
/// Every part is written with a tag or a length first, so that no two different mutations
/// give the same byte stream: integers and doubles are apart (`1` is not `1.0`), `-0.0` is not
/// `0.0`, all NaNs are one, strings are their UTF-8 bytes. A map's members are digested each
/// on their own and summed, so the digest does not depend on the order a dictionary lists them.
struct MutationHasher {
    private(set) var state: UInt64 = 0xCBF2_9CE4_8422_2325

    mutating func byte(_ b: UInt8) {
        state ^= UInt64(b)
        state = state &* 0x0000_0100_0000_01B3
    }

    /// The 8 bytes of `v`, least significant first.
    mutating func word(_ v: UInt64) {
        var v = v
        for _ in 0..<8 {
            byte(UInt8(truncatingIfNeeded: v))
            v >>= 8
        }
    }

    mutating func count(_ n: Int) { word(UInt64(n)) }

    mutating func string(_ s: String) {
        count(s.utf8.count)
        for b in s.utf8 { byte(b) }
    }

    mutating func segments(_ segments: [String]) {
        count(segments.count)
        for s in segments { string(s) }
    }

    mutating func double(_ d: Double) {
        word(d.isNaN ? Double.nan.bitPattern : d.bitPattern)
    }

    mutating func mutation(_ m: Mutation) {
        segments(m.key.path.segments)
        switch m.kind {
        case .set(let data):
            byte(1)
            map(data.fields)
        case .patch(let data, let mask):
            byte(2)
            map(data.fields)
            count(mask.paths.count)
            for path in mask.paths { segments(path.segments) }
        case .delete: byte(3)
        case .tombstone: byte(4)
        case .verify: byte(5)
        }
        count(m.fieldTransforms.count)
        for transform in m.fieldTransforms {
            segments(transform.path.segments)
            switch transform.operation {
            case .serverTimestamp: byte(1)
            case .increment(let operand):
                byte(2)
                value(operand)
            case .arrayUnion(let elements):
                byte(3)
                array(elements)
            case .arrayRemove(let elements):
                byte(4)
                array(elements)
            }
        }
        switch m.precondition {
        case .none: byte(0)
        case .exists(let exists): byte(exists ? 1 : 2)
        case .updateTime(let version):
            byte(3)
            word(UInt64(bitPattern: version.microseconds))
        }
    }

    mutating func value(_ v: Value) {
        switch v {
        case .null: byte(0)
        case .boolean(let b): byte(b ? 2 : 1)
        case .integer(let i):
            byte(3)
            word(UInt64(bitPattern: i))
        case .double(let d):
            byte(4)
            double(d)
        case .timestamp(let t):
            byte(5)
            word(UInt64(bitPattern: t.seconds))
            word(UInt64(UInt32(bitPattern: t.nanos)))
        case .string(let s):
            byte(6)
            string(s)
        case .bytes(let b):
            byte(7)
            count(b.count)
            for x in b { byte(x) }
        case .reference(let key):
            byte(8)
            segments(key.path.segments)
        case .attachment(let id):
            byte(9)
            string(id.hex)
        case .geoPoint(let g):
            byte(10)
            double(g.latitude)
            double(g.longitude)
        case .array(let elements):
            byte(11)
            array(elements)
        case .map(let fields):
            byte(12)
            map(fields)
        }
    }

    mutating func array(_ elements: [Value]) {
        count(elements.count)
        for e in elements { value(e) }
    }

    /// The members digested one by one, each mixed (SplitMix64's finalizer) and summed.
    mutating func map(_ fields: [String: Value]) {
        var sum: UInt64 = 0
        for (key, value) in fields {
            var member = MutationHasher()
            member.string(key)
            member.value(value)
            var z = member.state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            sum &+= z ^ (z >> 31)
        }
        count(fields.count)
        word(sum)
    }
}
