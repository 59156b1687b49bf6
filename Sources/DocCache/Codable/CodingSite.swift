import DocModel

/// The key of an array element in a coding path: `[2]` in `lines[2].amount`.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "[\(intValue ?? 0)]" }

    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

/// A map key made at run time (`super`, or a key a caller names).
struct NameKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }

    static let `super` = NameKey("super")
}

/// Where a value is being encoded or decoded: the document (when known) and the coding path.
/// Cheap to make for every field: the path is the parent container's array plus one key, and
/// it is joined into text only when an error names it.
struct CodingSite {
    let documentKey: DocumentKey?
    let parent: [any CodingKey]
    let key: (any CodingKey)?

    init(documentKey: DocumentKey?, parent: [any CodingKey], key: (any CodingKey)? = nil) {
        self.documentKey = documentKey
        self.parent = parent
        self.key = key
    }

    /// The full coding path.
    var path: [any CodingKey] {
        guard let key else { return parent }
        return parent + [key]
    }

    /// `invalidArgument` naming this site.
    func error(_ message: String) -> DocError {
        DocError(.invalidArgument, message, at: Self.location(path, in: documentKey))
    }

    /// A coding path as a field path with array positions: `lines[2].amount`; names that are
    /// not simple identifiers are backquoted as in ``FieldPath``.
    static func text(of path: [any CodingKey]) -> String {
        var out = ""
        for key in path {
            if key is IndexKey {
                out += key.stringValue
                continue
            }
            if !out.isEmpty { out += "." }
            out += FieldPath(unchecked: [key.stringValue]).canonicalString
        }
        return out
    }

    /// Whether `location` is `outer` or a location inside it (`outer.field`, `outer[2]`).
    static func location(_ location: String?, isWithin outer: String) -> Bool {
        guard let location, location.hasPrefix(outer) else { return false }
        let rest = location.utf8.dropFirst(outer.utf8.count)
        guard let next = rest.first else { return true }
        if next == UInt8(ascii: ".") || next == UInt8(ascii: "[") { return true }
        // The document itself (`invoices/i1`) and one of its fields (`invoices/i1 field x`).
        return !outer.contains(" field ") && rest.starts(with: " field ".utf8)
    }

    /// The error location: `invoices/i1 field lines[2].amount`, `field lines[2].amount` when
    /// the document is not known, the document alone for the document itself.
    static func location(_ path: [any CodingKey], in documentKey: DocumentKey?) -> String? {
        let field = text(of: path)
        switch (documentKey, field.isEmpty) {
        case (let key?, false): return "\(key) field \(field)"
        case (let key?, true): return key.description
        case (nil, false): return "field \(field)"
        case (nil, true): return nil
        }
    }

    /// `error` as a `DocError` located at a field path: kept when the coders made it (for
    /// this value or one inside it), given this site's location when a type's own check threw
    /// it (a `DocumentKey("…")` in an `init(from:)`; its own location, if any, moves into the
    /// message), otherwise translated with the path it names (the standard `EncodingError` /
    /// `DecodingError`) or with this site's path (anything else).
    func converting(_ error: any Error) -> DocError {
        switch error {
        case var error as DocError:
            guard let here = Self.location(path, in: documentKey), !Self.location(error.location, isWithin: here) else {
                return error
            }
            if let elsewhere = error.location { error.message += " (\(elsewhere))" }
            error.location = here
            return error
        case let error as EncodingError:
            switch error {
            case .invalidValue(_, let context):
                return DocError(.invalidArgument, context.debugDescription, at: Self.location(context.codingPath, in: documentKey))
            @unknown default:
                return self.error("\(error)")
            }
        case let error as DecodingError:
            switch error {
            case .keyNotFound(let key, let context):
                return DocError(.invalidArgument, "the field is missing",
                                at: Self.location(context.codingPath + [key], in: documentKey))
            case .valueNotFound(let type, let context):
                return DocError(.invalidArgument, "expected \(type), found null (\(context.debugDescription))",
                                at: Self.location(context.codingPath, in: documentKey))
            case .typeMismatch(let type, let context):
                return DocError(.invalidArgument, "expected \(type) (\(context.debugDescription))",
                                at: Self.location(context.codingPath, in: documentKey))
            case .dataCorrupted(let context):
                return DocError(.invalidArgument, context.debugDescription, at: Self.location(context.codingPath, in: documentKey))
            @unknown default:
                return self.error("\(error)")
            }
        default:
            return self.error("\(error)")
        }
    }
}
