public import DocModel

/// A type a ``DocumentID`` property can hold: the document's id (`String`) or its full path
/// (``DocumentKey``).
public protocol DocumentIDWrappable: Codable, Sendable {
    /// The value for the document at `key`.
    static func wrap(_ key: DocumentKey) -> Self
}

extension String: DocumentIDWrappable {
    /// The document's id: the last segment of its path.
    public static func wrap(_ key: DocumentKey) -> String { key.documentID }
}

extension DocumentKey: DocumentIDWrappable {
    /// The document's path.
    public static func wrap(_ key: DocumentKey) -> DocumentKey { key }
}

/// The id of the document a model was read from.
///
/// ```swift
/// struct Invoice: Codable {
///     @DocumentID var id: String?
///     var number: String
/// }
/// let invoice = try snapshot.data(as: Invoice.self)   // invoice.id == snapshot.documentID
/// ```
///
/// - Reading (``DocumentDecoder``): the property is set from the document's path, wherever it
///   appears in the model; a field of the same name stored in the document is ignored (the path
///   is the id). Decoding fields without a document key leaves it nil.
/// - Writing (``DocumentEncoder``): the property is never written. Setting it does not move or
///   name the document: the write goes to the reference it is made on (`addDocument(from:)`
///   makes a new id), and the value is ignored.
/// - Other coders (`JSONEncoder`) see it as an optional of its wrapped type.
@propertyWrapper
public struct DocumentID<Wrapped: DocumentIDWrappable>: OptionalValueWrapper, Sendable {
    /// The document's id once decoded; never written.
    public var wrappedValue: Wrapped?

    /// A property holding `wrappedValue` (usually `nil`: decoding sets it).
    public init(wrappedValue: Wrapped?) {
        self.wrappedValue = wrappedValue
    }
}

extension DocumentID: Equatable where Wrapped: Equatable {}
extension DocumentID: Hashable where Wrapped: Hashable {}

/// How the document coders recognize a ``DocumentID`` of any wrapped type.
protocol DocumentIDMarker {
    init(documentKey: DocumentKey?)
}

extension DocumentID: DocumentIDMarker {
    init(documentKey: DocumentKey?) {
        wrappedValue = documentKey.map(Wrapped.wrap)
    }
}
