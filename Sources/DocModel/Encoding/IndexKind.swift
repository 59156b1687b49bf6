/// Which index an entry belongs to: a field's whole value, one element of an array field, or a
/// declared composite index (several fields at once).
///
/// The raw value is what stores persist (LevelDB keys, a PostgreSQL column): never renumber.
/// PostgreSQL's `kind` column also holds 2 + the raw value for an unindexed marker, which is
/// why ``composite`` is 4 and not 2.
package enum IndexKind: Int64, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The value at the field path: serves `==`, `in`, `!=`, `not-in`, range filters and
    /// `orderBy` on the field.
    case value = 0
    /// One element of the array at the field path (equal elements once): serves
    /// `array-contains` and `array-contains-any`.
    case arrayElement = 1
    /// The row of a declared ``CompositeIndex`` (server stores): its field is the index's
    /// ``CompositeIndex/entryField``, its value ``CompositeIndex/entry(of:)``. Serves
    /// equality filters on the index's leading fields with order-bys on the rest.
    case composite = 4

    package var description: String {
        switch self {
        case .value: "value"
        case .arrayElement: "array element"
        case .composite: "composite"
        }
    }
}
