public import DocModel
internal import Synchronization

/// The request handlers of a server, by request type.
///
/// ```swift
/// core.requests.register("approveExpense", scope: ["expenses"]) { context in
///     guard let expense = try await context.document(…) else { return .reject(DocError(.notFound, "…")) }
///     return .apply([.update(expense.key.description, ["approved": true])], result: .boolean(true))
/// }
/// ```
public final class RequestRegistry: Sendable {
    private let handlers = Mutex<[String: RequestHandler]>([:])

    /// An empty registry: requests of every type are unhandled until one is registered.
    public init() {}

    /// Registers (or replaces) the handler of `type`. `scope` lists the top-level collections
    /// its writes may touch.
    public func register(
        _ type: String, scope: Set<String>,
        _ decide: @escaping @Sendable (RequestContext) async throws(DocError) -> RequestDecision
    ) {
        handlers.withLock { $0[type] = RequestHandler(scope: scope, decide: decide) }
    }

    /// The handler of `type`, if one is registered.
    public func handler(for type: String) -> RequestHandler? {
        handlers.withLock { $0[type] }
    }

    /// The registered types, sorted.
    public var types: [String] { handlers.withLock { $0.keys.sorted() } }
}
