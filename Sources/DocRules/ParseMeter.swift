/// Counts the elementary steps of the lexer (bytes looked at) and the parser (tokens looked
/// at) while it is installed with `ParseMeter.$current.withValue(meter) { … }` — for tests that
/// bound the work of a parse by the size of its input, so that no input can make the parser
/// hang or take super-linear time.
///
/// Once ``budget`` steps are spent the lexer sees the end of its input and the parser the end
/// token, so every loop ends, and the parse fails with `tooComplex`. Without a meter (always,
/// outside such tests) parsing is unbounded by steps; nesting limits still apply.
///
/// `@unchecked Sendable`: a meter is installed for one parse, which runs synchronously on the
/// task that installed it; nothing else touches it meanwhile.
final class ParseMeter: @unchecked Sendable {
    /// The meter of the parse running on this task, if any.
    @TaskLocal static var current: ParseMeter?

    /// The most steps allowed.
    let budget: Int
    /// The steps taken so far.
    private(set) var steps = 0

    init(budget: Int) { self.budget = budget }

    /// Whether the budget was spent (the parse was cut short).
    var isExhausted: Bool { steps > budget }

    /// Takes a step; `false` once the budget is spent.
    func step() -> Bool {
        steps += 1
        return steps <= budget
    }
}
