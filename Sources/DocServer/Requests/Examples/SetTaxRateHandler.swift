public import DocModel

/// The `setTaxRate` example handler: changes an invoice's tax rate and recomputes its tax
/// and total from its lines, all in one commit.
///
/// Params: `{"invoice": "invoices/x", "taxRateBasisPoints": 1900}` (19.00 %). Invoices are
/// `invoices/{id}` with `lines` (an array of maps with an integer `net`, minor units),
/// integer `taxRateBasisPoints`, `tax` and `total`. Each line gets `tax` (its net × rate,
/// rounded half away from zero) and `total`; the invoice's `tax` is the sum of line taxes and
/// `total` = net sum + tax. A stale base version (the invoice changed since the user saw it)
/// is rejected before this runs. Result: `{"tax": …, "total": …}`.
public enum SetTaxRateHandler {
    /// The request type this handler is registered under.
    public static let type = "setTaxRate"
    /// The collection its writes touch: the invoice alone.
    public static let scope: Set<String> = ["invoices"]

    /// Reads the invoice and recomputes it (see the type's description). Throws `invalidArgument`
    /// for bad params, `notFound` for a missing or deleted invoice, `failedPrecondition` for one
    /// without a `lines` array of maps with an integer `net`, and `outOfRange` when a tax or a
    /// total does not fit in a 64-bit integer.
    public static func decide(_ context: RequestContext) async throws(DocError) -> RequestDecision {
        let params = context.request.params
        guard case .string(let path)? = params["invoice"], let key = try? DocumentKey(path), key.path.count == 2,
              key.path.firstSegment == "invoices" else {
            throw DocError(.invalidArgument, "params.invoice must be an invoice path like \"invoices/x\"", at: "params.invoice")
        }
        guard case .integer(let rate)? = params["taxRateBasisPoints"], (0...100_000).contains(rate) else {
            throw DocError(.invalidArgument, "params.taxRateBasisPoints must be an integer 0…100000 (basis points)",
                           at: "params.taxRateBasisPoints")
        }
        guard let invoice = try await context.document(key), !invoice.isTombstone else {
            throw DocError(.notFound, "the invoice \(path) does not exist")
        }
        guard case .array(let lines)? = invoice.data.fields["lines"] else {
            throw DocError(.failedPrecondition, "the invoice \(path) has no lines array")
        }
        var newLines: [Value] = []
        var netSum: Int64 = 0
        var taxSum: Int64 = 0
        for (index, line) in lines.enumerated() {
            guard case .map(var fields) = line, case .integer(let net)? = fields["net"] else {
                throw DocError(.failedPrecondition, "line \(index) of \(path) has no integer net")
            }
            let tax = try roundedTax(net: net, basisPoints: rate, line: index, of: path)
            fields["tax"] = .integer(tax)
            fields["total"] = .integer(try sum(net, tax, "line \(index)'s total", of: path))
            newLines.append(.map(fields))
            netSum = try sum(netSum, net, "the net sum", of: path)
            taxSum = try sum(taxSum, tax, "the tax", of: path)
        }
        let total = try sum(netSum, taxSum, "the total", of: path)
        return .apply([
            .update(path, [
                "lines": .array(newLines), "taxRateBasisPoints": .integer(rate),
                "tax": .integer(taxSum), "total": .integer(total),
            ]),
        ], result: .map(["tax": .integer(taxSum), "total": .integer(total)]))
    }

    /// net × basisPoints / 10,000, rounded half away from zero, in integer arithmetic; `nil`
    /// when net × basisPoints does not fit in 64 bits.
    static func roundedTax(net: Int64, basisPoints: Int64) -> Int64? {
        let (product, overflow) = net.multipliedReportingOverflow(by: basisPoints)
        guard !overflow else { return nil }
        let (quotient, remainder) = product.quotientAndRemainder(dividingBy: 10_000)
        if remainder.magnitude * 2 >= 10_000 { return quotient + (product < 0 ? -1 : 1) }
        return quotient
    }

    /// ``roundedTax(net:basisPoints:)`` of line `line`, or `outOfRange`.
    private static func roundedTax(net: Int64, basisPoints: Int64, line: Int, of path: String) throws(DocError) -> Int64 {
        guard let tax = roundedTax(net: net, basisPoints: basisPoints) else {
            throw DocError(.outOfRange, "line \(line) of \(path): its net \(net) at \(basisPoints) basis points overflows a 64-bit integer")
        }
        return tax
    }

    /// `a + b`, or `outOfRange` naming `what` when it does not fit in 64 bits.
    private static func sum(_ a: Int64, _ b: Int64, _ what: String, of path: String) throws(DocError) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard !overflow else { throw DocError(.outOfRange, "\(what) of \(path) overflows a 64-bit integer") }
        return sum
    }
}

extension RequestRegistry {
    /// Registers the built-in example handlers, `transfer` and `setTaxRate`
    /// (`docctl serve --examples`).
    public func registerExamples() {
        register(TransferHandler.type, scope: TransferHandler.scope) { context throws(DocError) in
            try await TransferHandler.decide(context)
        }
        register(SetTaxRateHandler.type, scope: SetTaxRateHandler.scope) { context throws(DocError) in
            try await SetTaxRateHandler.decide(context)
        }
    }
}
