package import DocModel

/// An entry of a field index — a document's key and the encoding of its value (or array
/// element) — and so also a position in the index's (value, key) order to read on from.
package struct IndexPosition: Sendable, Hashable, CustomStringConvertible {
    /// The index encoding of the value.
    package var value: [UInt8]
    /// The document.
    package var key: DocumentKey

    package init(value: [UInt8], key: DocumentKey) {
        self.value = value
        self.key = key
    }

    package var description: String { "(\(value.count) bytes, \(key))" }
}
