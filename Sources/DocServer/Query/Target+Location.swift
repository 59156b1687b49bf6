internal import DocModel

extension Target {
    /// Where an error about the target points: `target PATH` for a collection or a document,
    /// `target collection group ID` (`… under PATH` below a document) for a collection group,
    /// whose path alone names only where the group is searched (often the root: empty).
    var errorLocation: String {
        guard let group = collectionGroup else { return "target \(path)" }
        return path.isEmpty ? "target collection group \(group)" : "target collection group \(group) under \(path)"
    }
}
