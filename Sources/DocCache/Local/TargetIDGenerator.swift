/// Hands out target ids the Firestore way: query targets are even (2, 4, 6, …), limbo
/// resolution targets odd (1, 3, 5, …), each stream strictly increasing.
package struct TargetIDGenerator: Sendable {
    private var next: TargetID

    /// Query targets, continuing after the highest id already persisted.
    package static func forQueryTargets(after highest: TargetID) -> TargetIDGenerator {
        var base = highest + 1
        if base % 2 != 0 { base += 1 }
        return TargetIDGenerator(next: max(base, 2))
    }

    /// Limbo-resolution targets (never persisted): 1, 3, 5, …
    package static func forLimboTargets() -> TargetIDGenerator {
        TargetIDGenerator(next: 1)
    }

    private init(next: TargetID) { self.next = next }

    package mutating func nextID() -> TargetID {
        defer { next += 2 }
        return next
    }
}
