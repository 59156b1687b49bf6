public import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
public import DocModel

/// Where an identity provider's public keys (a JWKS document) are read: an `http(s)` URL,
/// or a file (re-read at each refresh, so a rotated file is picked up without a restart).
public enum JWKSSource: Sendable, Hashable, CustomStringConvertible {
    /// An `http(s)` URL, fetched without caching; only a 200 answer is accepted. Its
    /// `Cache-Control: max-age` (kept within 1 min…1 day) sets how long the keys stay fresh.
    case url(URL)
    /// A file path, read again at each refresh.
    case file(String)

    /// Reads `--jwks` text: `https://…` or `http://…` is a URL, anything else a file path.
    ///
    /// - Throws: `invalidArgument` for an empty text or a URL that does not parse.
    public init(_ text: String) throws(DocError) {
        guard !text.isEmpty else {
            throw DocError(.invalidArgument, "the JWKS location is empty: give an https:// URL or a file")
        }
        let lower = text.lowercased()
        if lower.hasPrefix("https://") || lower.hasPrefix("http://") {
            guard let url = URL(string: text), url.host != nil else {
                throw DocError(.invalidArgument, "the JWKS URL \(AuthClaims.quoted(text)) does not parse")
            }
            self = .url(url)
        } else {
            self = .file(text)
        }
    }

    public var description: String {
        switch self {
        case .url(let url): url.absoluteString
        case .file(let path): path
        }
    }

    /// One read of the key set: its bytes and how long the source says they stay fresh.
    struct Fetched: Sendable {
        var data: Data
        /// `Cache-Control: max-age`, when the answer has one.
        var maxAge: Duration?
    }

    /// Reads the key set, refusing more than `maxBytes`.
    ///
    /// - Throws: `unavailable` when the source cannot be read (connection refused, timeout,
    ///   an HTTP status other than 200, a missing file), `invalidArgument` when it is larger
    ///   than `maxBytes`.
    func fetch(maxBytes: Int, timeout: Duration) async throws(DocError) -> Fetched {
        switch self {
        case .file(let path):
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue
            guard let size else {
                throw DocError(.unavailable, "cannot read the JWKS file \(path): it does not exist or cannot be read")
            }
            guard size <= maxBytes else {
                throw DocError(.invalidArgument, "the JWKS file \(path) is \(size) bytes, more than the \(maxBytes) a key set may have")
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw DocError(.unavailable, "cannot read the JWKS file \(path)")
            }
            return Fetched(data: data, maxAge: nil)
        case .url(let url):
            return try await Self.download(url, maxBytes: maxBytes, timeout: timeout)
        }
    }

    private static func download(_ url: URL, maxBytes: Int, timeout: Duration) async throws(DocError) -> Fetched {
        var request = URLRequest(url: url)
        request.timeoutInterval = timeout.secondsValue
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw DocError(.unavailable, "cannot read the JWKS at \(url.absoluteString): \(error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw DocError(.unavailable, "cannot read the JWKS at \(url.absoluteString): not an HTTP answer")
        }
        guard http.statusCode == 200 else {
            throw DocError(.unavailable, "cannot read the JWKS at \(url.absoluteString): HTTP \(http.statusCode)")
        }
        guard data.count <= maxBytes else {
            throw DocError(.invalidArgument, "the JWKS at \(url.absoluteString) is \(data.count) bytes, more than the \(maxBytes) a key set may have")
        }
        let cacheControl = http.value(forHTTPHeaderField: "Cache-Control")
        return Fetched(data: data, maxAge: cacheControl.flatMap(maxAge(inCacheControl:)))
    }

    /// The `max-age` of a `Cache-Control` value (`public, max-age=19845, must-revalidate`).
    static func maxAge(inCacheControl value: String) -> Duration? {
        for directive in value.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingSpaces.lowercased() == "max-age",
                  let seconds = Int64(parts[1].trimmingSpaces), seconds >= 0 else { continue }
            return .seconds(seconds)
        }
        return nil
    }
}
