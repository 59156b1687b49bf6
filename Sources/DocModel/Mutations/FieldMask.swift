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
        var sorted = paths.sorted()
        var i = 1
        while i < sorted.count {
            if sorted[i] == sorted[i - 1] { sorted.remove(at: i) } else { i += 1 }
        }
        self.paths = sorted
    }

    /// The empty mask: covers nothing.
    public static let empty = FieldMask([FieldPath]())

    /// Whether `path` is one of the mask's paths or lies inside one of them.
    public func covers(_ path: FieldPath) -> Bool {
        paths.contains { $0.isPrefix(of: path) }
    }

    /// Whether the mask holds exactly `path`.
    public func contains(_ path: FieldPath) -> Bool { paths.contains(path) }

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
