import DocModel
import Testing
@testable import DocProtocol

/// Random and mutated frames: the decoder never crashes, and whatever it refuses is refused
/// with `invalidArgument`; whatever it accepts encodes and decodes to the same message.
@Suite struct FuzzTests {
    /// A small deterministic generator (SplitMix64).
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static var seeds: [[UInt8]] {
        RoundTripTests.clientMessages.map(FrameEncoder.encode) + RoundTripTests.serverMessages.map(FrameEncoder.encode)
    }

    func check(_ bytes: [UInt8]) -> (accepted: Bool, ok: Bool) {
        var accepted = false
        var ok = true
        for asClient in [true, false] {
            do {
                if asClient {
                    let m = try FrameDecoder().decodeClientMessage(bytes)
                    accepted = true
                    ok = ok && (try? FrameDecoder().decodeClientMessage(FrameEncoder.encode(m))) == m
                } else {
                    let m = try FrameDecoder().decodeServerMessage(bytes)
                    accepted = true
                    ok = ok && (try? FrameDecoder().decodeServerMessage(FrameEncoder.encode(m))) == m
                }
            } catch {
                ok = ok && error.error.code == .invalidArgument && !error.error.message.isEmpty
            }
        }
        return (accepted, ok)
    }

    @Test func mutatedFrames() {
        var rng = Generator(state: 42)
        let seeds = Self.seeds
        var refused = 0
        for i in 0..<3_000 {
            var bytes = seeds[i % seeds.count]
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                guard !bytes.isEmpty else { break }
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: bytes[at] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.remove(at: at)
                case 2: bytes.insert(Array(#"{}[]",:0-1e9"\"#.utf8).randomElement(using: &rng)!, at: at)
                case 3: bytes = Array(bytes[..<at])
                default:
                    let end = min(bytes.count, at + Int.random(in: 1...20, using: &rng))
                    bytes.insert(contentsOf: bytes[at..<end], at: at)
                }
            }
            let (accepted, ok) = check(bytes)
            #expect(ok, "frame: \(String(decoding: bytes, as: UTF8.self))")
            if !accepted { refused += 1 }
        }
        #expect(refused > 1_000)
    }

    /// Structurally valid JSON with random members and values for every frame type.
    @Test func randomObjects() {
        var rng = Generator(state: 7)
        let keys = ["type", "targetId", "target", "path", "limit", "clientId", "batchId", "mutations", "kind", "data",
                    "state", "targetIds", "document", "fields", "version", "error", "code", "message", "token",
                    "protocolVersion", "filters", "op", "value", "field", "resumeToken", "streamToken"]
        let types = ClientMessage.types + ServerMessage.types
        func randomValue(_ depth: Int) -> Value {
            switch Int.random(in: 0..<(depth > 3 ? 6 : 9), using: &rng) {
            case 0: return .null
            case 1: return .boolean(Bool.random(using: &rng))
            case 2: return .integer(Int64.random(in: -5...5, using: &rng))
            case 3: return .double(Double.random(in: -1...1, using: &rng))
            case 4: return .string(["a/b", "c", "", "==", "set", "added", "AQ==", "x.y"].randomElement(using: &rng)!)
            case 5: return .integer(Int64.random(in: Int64.min...Int64.max, using: &rng))
            case 6: return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in randomValue(depth + 1) })
            default:
                var m: [String: Value] = [:]
                for _ in 0..<Int.random(in: 0...4, using: &rng) { m[keys.randomElement(using: &rng)!] = randomValue(depth + 1) }
                return .map(m)
            }
        }
        for _ in 0..<3_000 {
            var m: [String: Value] = ["type": .string(types.randomElement(using: &rng)!)]
            for _ in 0..<Int.random(in: 0...5, using: &rng) { m[keys.randomElement(using: &rng)!] = randomValue(1) }
            let bytes = Value.map(m).jsonBytes
            #expect(check(bytes).ok, "frame: \(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test func base64() {
        var rng = Generator(state: 3)
        for n in 0..<64 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let text = Base64.encode(bytes)
            #expect(Base64.decode(text) == bytes)
        }
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        for bad in ["Zm9", "Zm9=Zm9v", "Zm=v", "Zm9v\n", "Zn==", "Zm9=", "===="] {
            #expect(Base64.decode(bad) == nil, "\(bad)")
        }
        #expect(Base64.decode("") == [])
    }
}
