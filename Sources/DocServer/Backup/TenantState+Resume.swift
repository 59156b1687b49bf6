internal import DocModel

extension TenantState {
    /// Whether a resume token of `incarnation` at `version` describes data this database has:
    /// a token of the current incarnation, or of the incarnation a restore replaced up to the
    /// backup's version (``PreviousIncarnation/validThrough``). A token of the previous
    /// incarnation past that version stands for commits the restore lost: it is never resumed,
    /// whatever versions the restored database reaches later (commit versions come from a
    /// clock, so they soon pass it).
    func resumes(incarnation: UInt64, version: SnapshotVersion) -> Bool {
        if incarnation == self.incarnation { return true }
        guard let previous = previousIncarnation, incarnation == previous.incarnation else { return false }
        return version <= previous.validThrough
    }

    /// A random incarnation other than `other` (and never 0): what a restore gives a tenant.
    package static func newIncarnation(other: UInt64) -> UInt64 {
        while true {
            let candidate = UInt64.random(in: 1...UInt64.max)
            if candidate != other { return candidate }
        }
    }
}
