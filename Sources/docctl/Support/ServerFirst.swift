import DocModel

/// docctl's default read: a command runs in a fresh process whose store has not connected
/// yet, so the library's `.default` source (the server while online, else the cache) would
/// always answer from the cache. docctl asks the server and falls back to the cache only when
/// the server cannot be reached (`unavailable`: the store went offline).
enum ServerFirst {
    static func read<T>(server: () async throws(DocError) -> T, cache: () async throws(DocError) -> T) async throws(DocError) -> T {
        do {
            return try await server()
        } catch where error.code == .unavailable {
            return try await cache()
        }
    }
}
