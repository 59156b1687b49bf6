public import DocModel

/// The `transfer` example handler: moves an integer amount (minor units) between two
/// account documents of the tenant and writes a ledger entry.
///
/// Params: `{"from": "accounts/a", "to": "accounts/b", "amount": 500}`. Accounts are
/// `accounts/{id}` with an integer `balance`. Rejects: bad params (`invalidArgument`), the
/// same account twice (`invalidArgument`), a missing or deleted account (`notFound`),
/// insufficient funds (`failedPrecondition`). Applied: both balances change and
/// `ledger/{requestId}` records `from`, `to`, `amount`, `requestId`, `createdBy`; the result
/// is `{"from": balance after, "to": balance after}`.
public enum TransferHandler {
    /// The request type this handler is registered under.
    public static let type = "transfer"
    /// The collections its writes touch: the two accounts and the ledger entry.
    public static let scope: Set<String> = ["accounts", "ledger"]

    /// Reads both accounts and decides the transfer (see the type's description). Throws
    /// `invalidArgument`, `notFound`, `failedPrecondition` for an account without an integer
    /// balance, or `outOfRange` when the target balance would overflow.
    public static func decide(_ context: RequestContext) async throws(DocError) -> RequestDecision {
        let params = context.request.params
        let from = try accountPath(params["from"], name: "from")
        let to = try accountPath(params["to"], name: "to")
        guard case .integer(let amount)? = params["amount"] else {
            throw DocError(.invalidArgument, "params.amount must be an integer (minor units)", at: "params.amount")
        }
        guard amount > 0 else { throw DocError(.invalidArgument, "params.amount must be positive, got \(amount)", at: "params.amount") }
        guard from != to else { throw DocError(.invalidArgument, "a transfer needs two different accounts, got \(from) twice", at: "params.to") }
        let source = try await balance(of: from, in: context)
        let target = try await balance(of: to, in: context)
        guard source >= amount else {
            return .reject(DocError(.failedPrecondition, "insufficient funds: \(from) has \(source), the transfer needs \(amount)"))
        }
        let (newSource, newTarget) = (source - amount, target.addingReportingOverflow(amount))
        guard !newTarget.overflow else { throw DocError(.outOfRange, "the balance of \(to) would overflow") }
        var ledger: [String: Value] = [
            "from": .string(from), "to": .string(to), "amount": .integer(amount), "requestId": .string(context.request.id),
        ]
        if let author = context.request.createdBy { ledger["createdBy"] = .string(author) }
        return .apply([
            .update(from, ["balance": .integer(newSource)]),
            .update(to, ["balance": .integer(newTarget.partialValue)]),
            .set("ledger/\(context.request.id)", ledger),
        ], result: .map(["from": .integer(newSource), "to": .integer(newTarget.partialValue)]))
    }

    static func accountPath(_ value: Value?, name: String) throws(DocError) -> String {
        guard case .string(let path)? = value, let key = try? DocumentKey(path), key.path.count == 2,
              key.path.firstSegment == "accounts" else {
            throw DocError(.invalidArgument, "params.\(name) must be an account path like \"accounts/a\"", at: "params.\(name)")
        }
        return path
    }

    static func balance(of path: String, in context: RequestContext) async throws(DocError) -> Int64 {
        guard let account = try await context.document(path), !account.isTombstone else {
            throw DocError(.notFound, "the account \(path) does not exist")
        }
        guard case .integer(let balance)? = account.data.fields["balance"] else {
            throw DocError(.failedPrecondition, "the account \(path) has no integer balance")
        }
        return balance
    }
}
