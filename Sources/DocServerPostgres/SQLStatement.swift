internal import PostgresNIO

/// A statement assembled piece by piece, for the reads whose conditions depend on the call
/// (optional bounds, a direction): SQL text only from string literals (`StaticString`), every
/// value a bind parameter — never user data in the text.
struct SQLStatement {
    private var sql = ""
    private var bindings = PostgresBindings()

    init(_ fragment: StaticString) {
        sql = fragment.description
    }

    /// Appends SQL text (a literal).
    mutating func add(_ fragment: StaticString) {
        sql += fragment.description
    }

    /// Appends SQL text (a literal) followed by a number written out (an alias's suffix, say:
    /// a count, never a value from outside).
    mutating func add(_ fragment: StaticString, number: Int) {
        sql += fragment.description + String(number)
    }

    /// Appends a placeholder (`$n`) bound to `value`.
    mutating func bind(_ value: some PostgresDynamicTypeEncodable) {
        bindings.append(value)
        sql += "$\(bindings.count)"
    }

    /// Appends `fragment`, then a placeholder bound to `value`.
    mutating func add(_ fragment: StaticString, _ value: some PostgresDynamicTypeEncodable) {
        add(fragment)
        bind(value)
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: sql, binds: bindings) }
}
