/// A set of field paths: the fields a patch writes (or deletes).
///
/// The paths are kept in canonical form, sorted by ``FieldPath``'s order without duplicates,
/// so two masks naming the same paths are equal and hash alike whatever order they were
/// given in. A mask ``covers(_:)`` a path when one of its paths is that path or a prefix of
/// it.
public struct FieldMask: Sendable, Hashable, CustomStringConvertible {
    /// The paths, sorted and without duplicates.
    public let paths: [FieldPath]

    /// Creates a mask from paths in any order; duplicates are dropped.
    public init(_ paths: some Sequence<FieldPath>) {
        var unique: [FieldPath] = []
        for path in paths.sorted() where unique.last != path { unique.append(path) }
        self.paths = unique
    }

    /// The empty mask: covers nothing.
    public static let empty = FieldMask([FieldPath]())

    /// Whether `path` is one of the mask's paths or lies inside one of them.
    public func covers(_ path: FieldPath) -> Bool {
        paths.contains { $0.isPrefix(of: path) }
    }

    /// Whether the mask holds exactly `path` (a binary search).
    public func contains(_ path: FieldPath) -> Bool {
        let i = firstIndex(notBefore: path)
        return i < paths.count && paths[i] == path
    }

    /// The first of the mask's paths at or after `path` in order. The paths inside `path` (it
    /// as a prefix) follow it together: the order compares segment by segment.
    func firstIndex(notBefore path: FieldPath) -> Int {
        var low = 0, high = paths.count
        while low < high {
            let middle = (low + high) / 2
            if paths[middle] < path { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Whether the mask has no paths.
    public var isEmpty: Bool { paths.isEmpty }

    /// The number of paths.
    public var count: Int { paths.count }

    /// The mask with the paths of `other` added.
    public func union(_ other: FieldMask) -> FieldMask { FieldMask(paths + other.paths) }

    /// The paths in canonical form: `{a, b.c}`.
    public var description: String {
        "{" + paths.map(\.canonicalString).joined(separator: ", ") + "}"
    }
}
