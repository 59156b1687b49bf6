import DocModel
import DocProtocol
import DocServer
import Testing

/// A commit fanned out to listeners on real sockets: the bytes each one receives. Listeners of
/// the same target get byte-identical frames (that the server encodes them once is FanOutTests'), listeners with other
/// target ids their own, and every frame is exactly what ``FrameEncoder`` writes for its
/// message (docs/protocol.md).
@Suite("Fan-out frames over WebSocket", .serialized)
struct FanOutFrameTests {
    static let hot = try! DocModel.Query(document: DocumentKey("rooms/hot")).toTarget()
    static let rooms = try! DocModel.Query(collection: "rooms").limit(to: 10).toTarget()

    /// A connection listening to `targets`, every one of them current.
    func listener(_ server: LiveServer, _ targets: [(Int32, Target)]) async throws -> RawSocket {
        let socket = RawSocket(url: server.url)
        guard case .welcome? = await socket.hello(token: try await server.token()) else {
            throw DocError(.unavailable, "no welcome")
        }
        for (id, target) in targets {
            socket.send(.addTarget(.init(targetID: id, target: target)))
            guard await socket.next(where: { $0.isGlobalSnapshotFrame }) != nil else {
                throw DocError(.unavailable, "target \(id) never became current")
            }
        }
        return socket
    }

    /// The next `count` frames' texts.
    func texts(_ socket: RawSocket, _ count: Int) async -> [String] {
        var texts: [String] = []
        for _ in 0..<count {
            guard let text = await socket.nextText() else { break }
            texts.append(text)
        }
        return texts
    }

    @Test func listenersReceiveSharedAndOwnFramesAsTheEncoderWritesThem() async throws {
        let server = try await LiveServer()
        defer { server.removeData() }
        let a = try await listener(server, [(2, Self.hot)])
        let b = try await listener(server, [(2, Self.hot)])
        let c = try await listener(server, [(4, Self.hot)])
        let d = try await listener(server, [(2, Self.hot), (6, Self.rooms)])
        let writer = RawSocket(url: server.url)
        guard case .welcome? = await writer.hello(token: try await server.token(uid: "writer"), clientID: "writer") else {
            Issue.record("no welcome"); return
        }
        for seq in 1...2 {
            writer.send(.write(.init(clientID: "writer", batchID: seq,
                                     mutations: [.set(try DocumentKey("rooms/hot"), ObjectValue(["seq": .integer(Int64(seq))]))])))
            guard case .writeResult(let result)? = await writer.next(where: { $0.type != "writeHandshake" }) else {
                Issue.record("commit \(seq) failed"); return
            }
            let toA = await texts(a, 2), toB = await texts(b, 2), toC = await texts(c, 2), toD = await texts(d, 2)
            #expect(toA.count == 2 && toC.count == 2 && toD.count == 2)
            // The same target: byte for byte the same frames.
            #expect(toA == toB)
            // Every frame is the encoder's canonical text of what it says.
            for text in toA + toC + toD {
                let message = try FrameDecoder().decodeServerMessage(text)
                #expect(FrameEncoder.string(message) == text)
            }
            let changeA = try FrameDecoder().decodeServerMessage(toA[0])
            let changeC = try FrameDecoder().decodeServerMessage(toC[0])
            let changeD = try FrameDecoder().decodeServerMessage(toD[0])
            guard case .documentChange(let toTwo) = changeA, case .documentChange(let toFour) = changeC,
                  case .documentChange(let toBoth) = changeD else {
                Issue.record("expected document changes, got \(toA[0]), \(toC[0]), \(toD[0])"); return
            }
            #expect(toTwo.targetIDs == [2] && toFour.targetIDs == [4] && toBoth.targetIDs == [2, 6])
            #expect(toTwo.document.data["seq"] == .integer(Int64(seq)))
            #expect(toTwo.document.version == result.commitVersion)
            #expect(toFour.document == toTwo.document && toBoth.document == toTwo.document)
            // One global snapshot for everyone.
            #expect(try FrameDecoder().decodeServerMessage(toA[1]).isGlobalSnapshotFrame)
            #expect(toC[1] == toA[1] && toD[1] == toA[1])
        }
        for socket in [a, b, c, d, writer] { await socket.close() }
        await server.stop()
    }
}

extension ServerMessage {
    fileprivate var isGlobalSnapshotFrame: Bool {
        if case .targetChange(let change) = self { return change.isGlobalSnapshot }
        return false
    }
}
