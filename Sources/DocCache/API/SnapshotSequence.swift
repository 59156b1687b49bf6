/// Snapshots as an async sequence whose failures are typed: `for try await snapshot in
/// query.snapshots()` throws a ``DocError`` (`permissionDenied`, `invalidArgument` for an
/// unbounded query, the store's storage failure, …).
///
/// Ending the iteration (or cancelling its task) removes the listener. One iteration per
/// sequence: a second iterator gets nothing.
public struct SnapshotSequence<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = DocError

    private let base: AsyncThrowingStream<Element, any Error>

    init(_ base: AsyncThrowingStream<Element, any Error>) { self.base = base }

    public func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator()) }

    /// Iterates the snapshots (see the sequence for when it ends).
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Failure = DocError

        var base: AsyncThrowingStream<Element, any Error>.AsyncIterator

        /// The next snapshot; `nil` once the sequence ended.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(DocError) -> Element? {
            do {
                return try await base.next(isolation: actor)
            } catch let error as DocError {
                throw error
            } catch {
                throw DocError(.unknown, "\(error)")
            }
        }

        /// The next snapshot; `nil` once the sequence ended.
        public mutating func next() async throws(DocError) -> Element? {
            try await next(isolation: nil)
        }
    }
}
