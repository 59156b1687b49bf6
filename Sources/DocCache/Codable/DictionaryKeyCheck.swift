/// `Dictionary`, for refusing keys that are not strings, both ways: `[Int: T]` would otherwise
/// be written as a map with numeric-looking keys, `[UUID: T]` as an array of key, value, key…
protocol DictionaryKeyCheck {
    static var hasStringKeys: Bool { get }
}

extension Dictionary: DictionaryKeyCheck {
    static var hasStringKeys: Bool {
        Key.self == String.self || (Key.self is any CodingKeyRepresentable.Type && !(Key.self is any BinaryInteger.Type))
    }
}
