import DocModel
import Testing
@testable import DocProtocol
import DocTestSupport
import DocTestTraits

/// Random and mutated frames: the decoder never crashes, and whatever it refuses is refused
/// with `invalidArgument`; whatever it accepts encodes and decodes to the same message.
@Suite(.cpuBound) struct FuzzTests {
        typealias Generator = SplitMix64

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
        var rng = Generator(seed: 42)
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
        var rng = Generator(seed: 7)
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
        var rng = Generator(seed: 3)
        for n in 0..<64 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let text = Base64.encode(bytes)
            #expect((try? Base64.decode(text).get()) == bytes)
        }
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        for bad in ["Zm9", "Zm9=Zm9v", "Zm=v", "Zm9v\n", "Zn==", "Zm9=", "===="] {
            #expect((try? Base64.decode(bad).get()) == nil, "\(bad)")
        }
        #expect((try? Base64.decode("").get()) == [])
    }
}
