/// Which index of a field an entry belongs to: the field's whole value, or one element of an
/// array field.
///
/// The raw value is what stores persist (LevelDB keys, a PostgreSQL column): never renumber.
package enum IndexKind: Int64, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The value at the field path: serves `==`, `in`, `!=`, `not-in`, range filters and
    /// `orderBy` on the field.
    case value = 0
    /// One element of the array at the field path (equal elements once): serves
    /// `array-contains` and `array-contains-any`.
    case arrayElement = 1

    package var description: String { self == .value ? "value" : "array element" }
}
