package import DocModel

/// A DocServer's base URL, `http(s)://host[:port]`, checked, and the WebSocket URL of its
/// listen endpoint derived from it (`ws(s)://host[:port]/listen`).
///
/// The server serves `GET /listen` (upgraded to WebSocket) on the same host and port as
/// `GET /health`, so clients are configured with the one URL operators already know.
package struct ServerURL: Sendable, Hashable, CustomStringConvertible {
    /// The path of the server's WebSocket endpoint.
    package static let listenPath = "/listen"

    /// `https` (and so `wss`) rather than `http` (`ws`).
    package let isSecure: Bool
    /// The host name or address (an IPv6 address keeps its brackets).
    package let host: String
    /// The port, when the URL names one.
    package let port: Int?

    /// Parses and checks `string`.
    ///
    /// - Throws: `invalidArgument` naming what is wrong: a scheme other than `http` / `https`,
    ///   no host, a bad port, or anything after the authority but a single `/` (paths, queries,
    ///   fragments, user info).
    package init(_ string: String) throws(DocError) {
        let example = "expected http://host:port or https://host[:port], e.g. https://sync.example.com"
        let lowered = string.lowercased()
        let rest: Substring
        if lowered.hasPrefix("https://") {
            isSecure = true
            rest = string.dropFirst("https://".count)
        } else if lowered.hasPrefix("http://") {
            isSecure = false
            rest = string.dropFirst("http://".count)
        } else {
            throw DocError(.invalidArgument, "the server URL \"\(string)\" must start with http:// or https:// (\(example))", at: "server.url")
        }
        var authority = rest
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        if authority.contains(where: { "/?#@ ".contains($0) }) {
            throw DocError(.invalidArgument,
                "the server URL \"\(string)\" must be just a scheme, host and port, without a path, query, fragment or user info (\(example))",
                at: "server.url")
        }
        var hostPart = authority
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw DocError(.invalidArgument, "the server URL \"\(string)\" has an unterminated IPv6 address (\(example))", at: "server.url")
            }
            hostPart = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw DocError(.invalidArgument, "the server URL \"\(string)\" has text after its IPv6 address (\(example))", at: "server.url")
                }
                portPart = after.dropFirst()
            }
            guard hostPart.count > 2, hostPart.dropFirst().dropLast().allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw DocError(.invalidArgument, "the server URL \"\(string)\" has an invalid IPv6 address (\(example))", at: "server.url")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        }
        if !authority.hasPrefix("[") {
            guard !hostPart.isEmpty else {
                throw DocError(.invalidArgument, "the server URL \"\(string)\" has no host (\(example))", at: "server.url")
            }
            guard hostPart.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "." || $0 == "_" }) else {
                throw DocError(.invalidArgument,
                    "the server URL \"\(string)\" has an invalid host \"\(hostPart)\": use letters, digits, '-', '.' or an IP address (\(example))",
                    at: "server.url")
            }
        }
        host = String(hostPart)
        if let portPart {
            guard let port = Int(portPart), portPart.allSatisfy(\.isASCII), (1...65_535).contains(port) else {
                throw DocError(.invalidArgument, "the server URL \"\(string)\" has an invalid port \"\(portPart)\" (1…65535)", at: "server.url")
            }
            self.port = port
        } else {
            self.port = nil
        }
    }

    /// `http(s)://host[:port]`.
    package var description: String { (isSecure ? "https://" : "http://") + authority }

    /// `ws(s)://host[:port]/listen`: where the client opens its WebSocket connections.
    package var listenURL: String { (isSecure ? "wss://" : "ws://") + authority + Self.listenPath }

    private var authority: String { host + (port.map { ":\($0)" } ?? "") }
}
