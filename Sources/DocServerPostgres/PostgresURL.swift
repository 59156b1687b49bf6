internal import DocModel

/// A parsed database URL: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?PARAMS]` (also
/// `postgresql://`), the libpq URI form.
///
/// Parameters: `sslmode` (`disable`, `prefer` — the default —, `require`: TLS without
/// certificate checks, as libpq; `verify-ca`, `verify-full`: TLS with the system's trust
/// roots) and `host` (a directory holding the server's unix socket, e.g.
/// `?host=/var/run/postgresql`; the socket is `DIR/.s.PGSQL.PORT`). User, password, database
/// and parameter values may be percent-encoded. The password never appears in messages: see
/// ``redacted``.
struct PostgresURL: Sendable, Hashable {
    enum TLSMode: String, Sendable, Hashable {
        case disable, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    var scheme: String
    var user: String
    var password: String?
    var host: String
    var port: Int
    var database: String
    var socketDirectory: String?
    var tls: TLSMode

    /// The unix socket path when ``socketDirectory`` is set.
    var socketPath: String? { socketDirectory.map { "\($0)/.s.PGSQL.\(port)" } }

    /// The URL with the password replaced by `***` (for messages and logs).
    var redacted: String {
        var s = "\(scheme)://\(Self.encode(user))"
        if password != nil { s += ":***" }
        s += "@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(Self.encode(database))"
        var params: [String] = []
        if let socketDirectory { params.append("host=\(socketDirectory)") }
        if tls != .prefer { params.append("sslmode=\(tls.rawValue)") }
        if !params.isEmpty { s += "?" + params.joined(separator: "&") }
        return s
    }

    /// Parses `string`.
    ///
    /// - Throws: `invalidArgument` naming what is wrong (the message never repeats the password).
    init(_ string: String) throws(DocError) {
        func invalid(_ why: String) -> DocError {
            DocError(.invalidArgument,
                     "\(why); expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (or postgresql://…)",
                     at: "store URL \(Self.redactedForError(string))")
        }
        guard let schemeEnd = string.range(of: "://") else { throw invalid("the URL has no scheme") }
        let scheme = String(string[..<schemeEnd.lowerBound]).lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw invalid("the scheme is \"\(scheme)\", not postgres or postgresql")
        }
        self.scheme = scheme
        var rest = string[schemeEnd.upperBound...]

        var query = Substring("")
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        guard let slash = rest.firstIndex(of: "/") else { throw invalid("the URL names no database") }
        let authority = rest[..<slash]
        guard let database = Self.decode(rest[rest.index(after: slash)...]), !database.isEmpty else {
            throw invalid("the URL names no database")
        }
        self.database = database

        guard let at = authority.lastIndex(of: "@") else { throw invalid("the URL names no user") }
        let userInfo = authority[..<at]
        var hostPort = authority[authority.index(after: at)...]
        if let colon = userInfo.firstIndex(of: ":") {
            guard let user = Self.decode(userInfo[..<colon]), let password = Self.decode(userInfo[userInfo.index(after: colon)...]) else {
                throw invalid("the user or password is not valid percent-encoding")
            }
            self.user = user
            self.password = password
        } else {
            guard let user = Self.decode(userInfo) else { throw invalid("the user is not valid percent-encoding") }
            self.user = user
            self.password = nil
        }
        guard !user.isEmpty else { throw invalid("the URL names no user") }

        var port = 5432
        if hostPort.first == "[" {
            guard let close = hostPort.firstIndex(of: "]") else { throw invalid("an IPv6 host lacks its closing ]") }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            hostPort = hostPort[hostPort.index(after: close)...]
            if !hostPort.isEmpty {
                guard hostPort.first == ":" else { throw invalid("unexpected text after the IPv6 host") }
                hostPort = hostPort.dropFirst()
                guard let p = Int(hostPort), (1...65535).contains(p) else { throw invalid("the port is not a number in 1…65535") }
                port = p
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = String(hostPort[..<colon])
            guard let p = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(p) else {
                throw invalid("the port is not a number in 1…65535")
            }
            port = p
        } else {
            host = String(hostPort)
        }
        self.port = port

        var tls = TLSMode.prefer
        var socketDirectory: String?
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let value = Self.decode(parts[1]) else { throw invalid("the parameter \"\(pair)\" has no value") }
            switch parts[0] {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw invalid("sslmode \"\(value)\" is not one of disable, prefer, require, verify-ca, verify-full")
                }
                tls = mode
            case "host":
                guard value.hasPrefix("/") else { throw invalid("the host parameter must be a socket directory (an absolute path)") }
                socketDirectory = value
            default:
                throw invalid("unknown parameter \"\(parts[0])\" (known: sslmode, host)")
            }
        }
        if host.isEmpty {
            guard socketDirectory != nil else { throw invalid("the URL names no host") }
            host = "localhost"
        }
        self.tls = tls
        self.socketDirectory = socketDirectory
    }

    /// `string` with anything between `scheme://user:` and `@` replaced by `***`, for the
    /// messages of URLs that do not parse.
    static func redactedForError(_ string: String) -> String {
        guard let schemeEnd = string.range(of: "://") else { return string }
        let afterScheme = string[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return string }
        return String(string[..<colon]) + ":***" + String(string[at...])
    }

    static func decode(_ s: Substring) -> String? {
        guard s.contains("%") else { return String(s) }
        var bytes: [UInt8] = []
        var i = s.utf8.startIndex
        let utf8 = s.utf8
        while i < utf8.endIndex {
            let b = utf8[i]
            if b == UInt8(ascii: "%") {
                let h1 = utf8.index(after: i)
                guard h1 < utf8.endIndex else { return nil }
                let h2 = utf8.index(after: h1)
                guard h2 < utf8.endIndex, let hi = hex(utf8[h1]), let lo = hex(utf8[h2]) else { return nil }
                bytes.append(hi << 4 | lo)
                i = utf8.index(after: h2)
            } else {
                bytes.append(b)
                i = utf8.index(after: i)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    static func encode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "%" + String(b >> 4, radix: 16, uppercase: true) + String(b & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
