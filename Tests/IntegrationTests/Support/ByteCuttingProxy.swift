import DocTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A TCP proxy on 127.0.0.1 (plain sockets, a thread per direction and connection, the
/// ``ProxyLinks`` and ``CuttingProxy/Link`` of the exactly-once proxy) that cuts connections at
/// random byte points, seeded: when a cut point is reached, the bytes up to it are forwarded and
/// both sockets are shut down at once (the client sees its connection fail; the server sees the
/// request end early).
///
/// HTTP connections (the attachment transport) are followed request by request (request line,
/// `Content-Length`; ``HTTPRequestTracker``): a request body is cut at a random byte inside it,
/// a request head now and then, and the answer to a completed `PUT` (the server acted, the client
/// never hears). WebSocket connections (`GET /listen`, the document streams) are cut at a random
/// byte of what the server sends, the first few of them only. Every cut is recorded with where it
/// landed: "PUT /attachments/ab12… body byte 812345 of 2400000".
///
/// The random numbers of a connection come from a generator seeded with the seed and the
/// connection's index, so a connection's cut points depend only on the seed and the order of
/// its requests; which connection gets which index depends on timing.
final class ByteCuttingProxy: Sendable {
    struct Plan: Sendable {
        /// Request bodies sent to a target (an attachment's uploads) are all cut, at a random
        /// byte inside them, until `guaranteedBodyCuts` cuts were made in them; later ones with
        /// `bodyCutChance`. (A body the server refuses early and whose connection ends before
        /// the cut point is not cut, and does not count.)
        var guaranteedBodyCuts = 2
        var bodyCutChance = 0.15
        /// The chance that a request's head is cut, after a byte in 1…`maxHeadCutByte`: the
        /// first request of a connection only, unless `headCutsOnReusedConnections` (a cut there
        /// stalls a client on FoundationNetworking; see AttachmentProxyTests).
        var headCutChance = 0.03
        var maxHeadCutByte = 150
        var headCutsOnReusedConnections = false
        /// The heads of `PUT`s sent on a reused connection (not its first request) are all cut
        /// (after a byte in 1…`maxHeadCutByte`) until this many were.
        var guaranteedReusedPUTHeadCuts = 0
        /// The answers to completed `PUT`s are cut (where: ``answerCutPlace``) until
        /// `guaranteedAnswerCuts` were; later ones with `answerCutChance`.
        var guaranteedAnswerCuts = 2
        var answerCutChance = 0.1
        var maxAnswerCutByte = 120
        /// Where in an answer its cut may land.
        var answerCutPlace = AnswerCutPlace.anywhere
        /// The first `webSocketCuts` WebSocket connections are cut after a byte in
        /// 1…`maxWebSocketCutByte` of what the server sends (when it sends that many).
        var webSocketCuts = 2
        var maxWebSocketCutByte = 400
        /// No more cuts than this in all, and no more body and answer cuts than
        /// `maxCutsPerTarget` per attachment (the client backs off longer after each failure of
        /// the same upload: the test's time stays bounded).
        var maxCuts = 40
        var maxCutsPerTarget = Int.max
        /// Adds `Connection: close` to the head of each connection's first HTTP answer, so the
        /// client sends one request per connection: every cut lands on a fresh connection (a
        /// connection lost under a request on a reused one stalls a client on
        /// FoundationNetworking; see AttachmentProxyTests).
        var oneRequestPerConnection = false
    }

    /// Where in an answer (its first chunk: status line, header block, body) a cut may land.
    enum AnswerCutPlace: Sendable {
        /// After a byte in 1…`maxAnswerCutByte`.
        case anywhere
        /// Inside the status line, or after the header block: never after the status line and
        /// before the end of the header block, where a cut crashes a client on
        /// FoundationNetworking (see AttachmentProxyTests).
        case outsideHeaderBlock
        /// After the status line and before the last header line ends: exactly there.
        case insideHeaderBlock
    }

    struct Cut: Sendable, CustomStringConvertible {
        enum Place: Sendable, CustomStringConvertible {
            /// Client→server, inside an HTTP request.
            case request(HTTPRequestTracker.Position)
            /// Server→client, inside the answer to this request, after `byte` of it (`where`:
            /// in the status line, the header block or the body).
            case answer(to: String, byte: Int, where: String)
            /// Server→client on a WebSocket connection.
            case webSocket

            var description: String {
                switch self {
                case .request(let position): return "client→server, \(position)"
                case .answer(let request, let byte, let place):
                    return "server→client, the answer to \(ByteCuttingProxy.short(request)) after its byte \(byte) (\(place))"
                case .webSocket: return "server→client on the WebSocket"
                }
            }
        }

        var connection: Int
        var afterByte: Int
        var place: Place

        var description: String { "#\(connection) after byte \(afterByte) of the connection: \(place)" }
    }

    struct Statistics: Sendable, CustomStringConvertible {
        var connections = 0
        var webSocketConnections = 0
        var cuts: [Cut] = []
        /// Cuts made inside request bodies, per target (`/attachments/<id>`).
        var bodyCuts: [String: Int] = [:]
        var answerCuts = 0
        /// Body and answer cuts per target.
        var targetCuts: [String: Int] = [:]
        /// Cuts made inside the head of a request that was not its connection's first.
        var reusedHeadCuts = 0
        /// The body length of every `PUT` sent, per target, in order: a body shorter than the
        /// attachment is an upload continued from the server's offset.
        var putBodies: [String: [Int]] = [:]

        /// Client→server cuts inside the body of a `PUT /attachments/…`.
        var cutsInUploadBodies: Int {
            cuts.filter {
                if case .request(.body(let method, let target, _, _)) = $0.place { method == "PUT" && target.hasPrefix("/attachments/") } else { false }
            }.count
        }

        /// Server→client cuts of the answer to a complete `PUT /attachments/…`.
        var cutsInUploadAnswers: Int {
            cuts.filter { if case .answer(let request, _, _) = $0.place { request.hasPrefix("PUT /attachments/") } else { false } }.count
        }

        var description: String {
            "\(connections) connections (\(webSocketConnections) WebSocket), \(cuts.count) cuts (\(cutsInUploadBodies) inside upload bodies, "
                + "\(cutsInUploadAnswers) in answers to complete uploads):\n  " + cuts.map(\.description).joined(separator: "\n  ")
        }
    }

    let seed: UInt64
    /// Every connection's requests (heads and ends), answer chunks (their first line) and
    /// ends, with the time: ``events`` (a failing test shows the last ones, to see what a
    /// stalled client last did). `ATTACHMENT_PROXY_TRACE=1` also prints them as they happen.
    private let printEvents = ProcessInfo.processInfo.environment["ATTACHMENT_PROXY_TRACE"] == "1"
    private let started = ContinuousClock.now
    private let eventLog = Mutex<[String]>([])

    /// The proxy's events so far.
    var events: [String] { eventLog.withLock { $0 } }
    private let plan: Plan
    private let links: ProxyLinks
    private let targetPort: Int
    private let counts = Mutex(Statistics())

    init(targetPort: Int, seed: UInt64, plan: Plan = Plan()) throws {
        self.seed = seed
        self.plan = plan
        self.targetPort = targetPort
        links = try ProxyLinks(backlog: 64)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    var port: Int { links.port }
    var statistics: Statistics { counts.withLock { $0 } }

    /// Stops accepting and closes every open connection. Safe to call more than once.
    func stop() { links.stop() }

    /// Records a cut; false once `maxCuts` were made (the connection then goes on).
    private func takeCut(_ cut: Cut) -> Bool {
        let taken = counts.withLock { stats in
            guard stats.cuts.count < plan.maxCuts else { return false }
            stats.cuts.append(cut)
            switch cut.place {
            case .request(.body(_, let target, _, _)):
                stats.bodyCuts[target, default: 0] += 1
                stats.targetCuts[target, default: 0] += 1
            case .request(.head(let request, _)) where request > 0: stats.reusedHeadCuts += 1
            case .answer(let request, _, _):
                stats.answerCuts += 1
                stats.targetCuts[Self.target(of: request), default: 0] += 1
            default: break
            }
            return true
        }
        // Printed as it happens: should the client die of a cut, the log says which one.
        if taken {
            print("byte-cutting-proxy (seed 0x\(String(seed, radix: 16))): cut \(cut)")
            log(cut.connection, "cut: \(cut.place)")
        }
        return taken
    }

    /// Whether the next body to `target` (or the next answer to a request to it, with
    /// `answer`) is cut: always while fewer than the guaranteed cuts were made, never once the
    /// target had `maxCutsPerTarget`.
    private func decide(_ target: String, answer: Bool, _ random: inout Dice) -> Bool {
        let (made, guaranteed, chance, ofTarget) = counts.withLock { stats in
            answer ? (stats.answerCuts, plan.guaranteedAnswerCuts, plan.answerCutChance, stats.targetCuts[target] ?? 0)
                : (stats.bodyCuts[target] ?? 0, plan.guaranteedBodyCuts, plan.bodyCutChance, stats.targetCuts[target] ?? 0)
        }
        let roll = random.chance(chance)
        return ofTarget < plan.maxCutsPerTarget && (made < guaranteed || roll)
    }

    /// `/attachments/<id>` of `PUT /attachments/<id>`.
    private static func target(of request: String) -> String {
        String(request.drop { $0 != " " }.dropFirst())
    }

    /// A connection's random numbers.
    struct Dice: Sendable {
        var generator: SplitMix64
        mutating func chance(_ p: Double) -> Bool { Double(generator.next() % 1_000_000) / 1_000_000 < p }
        /// Uniform in 1…max.
        mutating func point(_ max: Int) -> Int { 1 + Int(generator.next() % UInt64(Swift.max(1, max))) }
    }

    /// What the two pumps of one connection share.
    private final class Shared: Sendable {
        struct State {
            /// nil: not known yet; 0: HTTP; n > 0: the proxy's n-th WebSocket connection.
            var webSocketOrdinal: Int?
            /// Requests whose last byte went to the server, oldest first, not yet answered.
            var completed: [String] = []
        }
        let state = Mutex(State())
    }

    private func acceptLoop() {
        var index = 0
        while let client = links.accept() {
            guard let server = connectProxied(client, toLoopbackPort: targetPort) else { continue }
            index += 1
            let connection = index
            var master = SplitMix64(seed: seed ^ (UInt64(connection) &* 0x9E37_79B9_7F4A_7C15))
            let requestDice = Dice(generator: SplitMix64(seed: master.next()))
            let answerDice = Dice(generator: SplitMix64(seed: master.next()))
            let link = CuttingProxy.Link(client: client, server: server)
            guard links.admit(link) else { return }
            counts.withLock { $0.connections += 1 }
            let shared = Shared()
            log(connection, "accepted")
            Thread.detachNewThread { [self] in
                pumpRequests(link, connection: connection, shared: shared, dice: requestDice)
                log(connection, "client→server ended")
                links.retire(link)
            }
            Thread.detachNewThread { [self] in
                pumpAnswers(link, connection: connection, shared: shared, dice: answerDice)
                log(connection, "server→client ended")
                links.retire(link)
            }
        }
    }

    /// Client → server: classifies the connection, follows HTTP requests and cuts them.
    private func pumpRequests(_ link: CuttingProxy.Link, connection: Int, shared: Shared, dice: Dice) {
        var dice = dice
        var tracker = HTTPRequestTracker()
        var forwarded = 0
        var webSocket: Bool?
        /// The absolute byte of the connection after which to cut, and whether it is a head's.
        var cutAt: (byte: Int, inHead: Bool)?
        var decidedHead = false
        link.pump(from: link.client, to: link.server) { bytes, _ in
            if webSocket == nil {
                let isWebSocket = bytes.starts(with: Array("GET /listen".utf8))
                webSocket = isWebSocket
                let ordinal = isWebSocket ? counts.withLock { stats in
                    stats.webSocketConnections += 1
                    return stats.webSocketConnections
                } : 0
                shared.state.withLock { $0.webSocketOrdinal = ordinal }
            }
            if webSocket == true { return .forward(bytes) }
            var offset = 0
            while offset < bytes.count {
                if tracker.atRequestStart && !decidedHead {
                    decidedHead = true
                    let reusedPUT = tracker.requestsBefore > 0 && bytes[offset...].starts(with: Array("PUT ".utf8))
                        && counts.withLock { $0.reusedHeadCuts } < plan.guaranteedReusedPUTHeadCuts
                    let roll = dice.chance(plan.headCutChance)
                    if (roll && (tracker.requestsBefore == 0 || plan.headCutsOnReusedConnections)) || reusedPUT {
                        cutAt = (forwarded + offset + dice.point(plan.maxHeadCutByte), true)
                    }
                }
                var limit = bytes.count
                if let cut = cutAt { limit = min(limit, cut.byte - forwarded) }
                let (consumed, event) = tracker.advance(bytes[offset..<limit])
                offset += consumed
                if let cut = cutAt, forwarded + offset == cut.byte {
                    if takeCut(Cut(connection: connection, afterByte: cut.byte, place: .request(tracker.position))) {
                        return .cut(before: Array(bytes[..<offset]))
                    }
                    cutAt = nil
                }
                if let event { log(connection, "→ \(event)") }
                switch event {
                case .head(let method, let target, let length)?:
                    cutAt = nil
                    if method == "PUT" { counts.withLock { $0.putBodies[target, default: []].append(length) } }
                    if length > 1, decide(target, answer: false, &dice) {
                        // A byte strictly inside the body: some of it arrives, not all.
                        cutAt = (forwarded + offset + dice.point(length - 1), false)
                    }
                case .end(let method, let target)?:
                    cutAt = nil
                    decidedHead = false
                    shared.state.withLock { $0.completed.append(method + " " + target) }
                case nil:
                    break
                }
            }
            forwarded += bytes.count
            return .forward(bytes)
        }
    }

    /// Server → client: cuts the answers to completed uploads, and WebSocket streams.
    private func pumpAnswers(_ link: CuttingProxy.Link, connection: Int, shared: Shared, dice: Dice) {
        var dice = dice
        var forwarded = 0
        var cutAt: (byte: Int, place: Cut.Place)?
        var decidedWebSocket = false
        var firstAnswer = true
        link.pump(from: link.server, to: link.client) { received, _ in
            var bytes = received
            let (ordinal, completed) = shared.state.withLock { state -> (Int, [String]) in
                defer { state.completed.removeAll() }
                return (state.webSocketOrdinal ?? 0, state.completed)
            }
            if ordinal == 0 {
                if firstAnswer, plan.oneRequestPerConnection, bytes.starts(with: Array("HTTP/1.".utf8)),
                   let lineEnd = FrameSplitter.find([13, 10], in: bytes[...]) {
                    bytes.insert(contentsOf: Array("Connection: close\r\n".utf8), at: lineEnd + 2)
                }
                firstAnswer = false
                let line = String(decoding: bytes.prefix(40), as: UTF8.self).split(separator: "\r\n").first.map(String.init) ?? ""
                log(connection, "← \(bytes.count) bytes: \(line)")
            }
            if ordinal > 0 {
                if !decidedWebSocket {
                    decidedWebSocket = true
                    let at = dice.point(plan.maxWebSocketCutByte)
                    if ordinal <= plan.webSocketCuts { cutAt = (at, .webSocket) }
                }
            } else if cutAt == nil, let request = completed.last, request.hasPrefix("PUT ") {
                // These bytes begin the answer to a request whose every byte reached the server.
                if decide(Self.target(of: request), answer: true, &dice), let (byte, place) = answerCutPoint(bytes, &dice) {
                    cutAt = (forwarded + byte, .answer(to: request, byte: byte, where: place))
                }
            }
            if let cut = cutAt, forwarded + bytes.count >= cut.byte {
                if takeCut(Cut(connection: connection, afterByte: cut.byte, place: cut.place)) {
                    return .cut(before: Array(bytes[..<(cut.byte - forwarded)]))
                }
                cutAt = nil
            }
            forwarded += bytes.count
            return .forward(bytes)
        }
    }

    /// Where to cut an answer that begins with `answer`: after which byte of it, and where
    /// that is (nil: nowhere allowed in these bytes).
    private func answerCutPoint(_ answer: [UInt8], _ dice: inout Dice) -> (Int, String)? {
        let statusEnd = FrameSplitter.find([13, 10], in: answer[...]).map { $0 + 2 }
        let headEnd = FrameSplitter.find([13, 10, 13, 10], in: answer[...]).map { $0 + 4 }
        func place(_ n: Int) -> String {
            guard let statusEnd, n >= statusEnd else { return "inside the status line" }
            guard let headEnd, n >= headEnd else { return "after the status line, inside the header block" }
            if n >= answer.count { return "after all of its first \(answer.count) bytes" }
            return n == headEnd ? "right after the header block" : "inside the body"
        }
        let n: Int
        switch plan.answerCutPlace {
        case .anywhere:
            n = dice.point(plan.maxAnswerCutByte)
        case .insideHeaderBlock:
            // From the whole status line to the last header line's end (exclusive).
            guard let statusEnd, let headEnd, headEnd - 2 > statusEnd else { return nil }
            n = statusEnd - 1 + dice.point(headEnd - 2 - statusEnd)
        case .outsideHeaderBlock:
            guard let statusEnd, let headEnd else { return nil }
            let before = statusEnd - 1, after = answer.count - headEnd + 1
            let k = dice.point(before + after)
            n = k <= before ? k : headEnd + (k - before - 1)
        }
        return (n, place(n))
    }

    private func log(_ connection: Int, _ text: String) {
        let elapsed = (ContinuousClock.now - started).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds / 1_000_000_000_000_000) / 1000
        let line = String(format: "%.3f s #%d ", seconds, connection) + text
        eventLog.withLock { $0.append(line) }
        if printEvents { print("byte-cutting-proxy " + line) }
    }

    static func short(_ request: String) -> String {
        request.count > 40 ? String(request.prefix(30)) + "…" + String(request.suffix(6)) : request
    }
}

/// Follows a client's HTTP/1.1 requests on one connection (request line, `Content-Length`
/// bodies) to say where in them the stream is. ``advance(_:)`` stops at each request's end of
/// head and end, so a caller can decide something there.
struct HTTPRequestTracker: Sendable {
    enum Position: Sendable, CustomStringConvertible {
        /// Inside the head of a request: `byte` of it were sent.
        case head(request: Int, byte: Int)
        /// Inside the body of a request: `byte` of `length` body bytes were sent.
        case body(method: String, target: String, byte: Int, length: Int)
        /// Between requests.
        case between(requests: Int)
        /// Inside a body of unknown length (chunked): the rest is not followed.
        case unfollowed(method: String, target: String)

        var description: String {
            switch self {
            case .head(let n, let byte): return "byte \(byte) of the head of request \(n + 1)"
            case .body(let method, let target, let byte, let length):
                return "\(ByteCuttingProxy.short(method + " " + target)) body byte \(byte) of \(length)"
            case .between(let n): return "after request \(n)"
            case .unfollowed(let method, let target): return "\(ByteCuttingProxy.short(method + " " + target)) in a chunked body"
            }
        }
    }

    enum Event: Sendable {
        /// The head of a request with a body of `length` bytes ended.
        case head(method: String, target: String, length: Int)
        /// A request's last byte went by.
        case end(method: String, target: String)
    }

    private var head: [UInt8] = []
    private var method = ""
    private var target = ""
    private var bodyLength = 0
    private var bodySent = 0
    private var inBody = false
    private var chunked = false
    private var requests = 0

    var atRequestStart: Bool { !inBody && !chunked && head.isEmpty }
    /// The requests of the connection that went by whole.
    var requestsBefore: Int { requests }

    var position: Position {
        if chunked { return .unfollowed(method: method, target: target) }
        if inBody { return .body(method: method, target: target, byte: bodySent, length: bodyLength) }
        if !head.isEmpty { return .head(request: requests, byte: head.count) }
        return .between(requests: requests)
    }

    /// Follows `bytes` up to the next event (or their end); returns how many were consumed.
    mutating func advance(_ bytes: ArraySlice<UInt8>) -> (consumed: Int, event: Event?) {
        guard !bytes.isEmpty, !chunked else { return (bytes.count, nil) }
        if inBody {
            let take = min(bytes.count, bodyLength - bodySent)
            bodySent += take
            guard bodySent == bodyLength else { return (take, nil) }
            inBody = false
            requests += 1
            return (take, .end(method: method, target: target))
        }
        var i = bytes.startIndex
        while i < bytes.endIndex {
            head.append(bytes[i])
            i += 1
            guard head.count >= 4, head[head.count - 4] == 13, head[head.count - 3] == 10,
                  head[head.count - 2] == 13, head[head.count - 1] == 10 else { continue }
            let consumed = i - bytes.startIndex
            parseHead()
            head = []
            if chunked { return (consumed, .head(method: method, target: target, length: 0)) }
            if bodyLength > 0 {
                inBody = true
                bodySent = 0
                return (consumed, .head(method: method, target: target, length: bodyLength))
            }
            requests += 1
            return (consumed, .end(method: method, target: target))
        }
        return (bytes.count, nil)
    }

    private mutating func parseHead() {
        let text = String(decoding: head, as: UTF8.self)
        let lines = text.split(separator: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        method = requestLine.first.map(String.init) ?? ""
        target = requestLine.count > 1 ? String(requestLine[1]) : ""
        bodyLength = 0
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let name = parts[0].lowercased(), value = parts[1].trimmingCharacters(in: .whitespaces)
            if name == "content-length" { bodyLength = Int(value) ?? 0 }
            if name == "transfer-encoding", value.lowercased().contains("chunked") { chunked = true }
        }
    }
}
