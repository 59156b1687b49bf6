/// A `Range` request header for one byte range (RFC 9110 §14): `bytes=N-`, `bytes=N-M` or
/// `bytes=-S` (the last S bytes).
enum ByteRange: Equatable {
    /// No usable range: serve the whole attachment (also for several ranges or another unit,
    /// which a server may ignore).
    case whole
    /// Bytes `first...last` (inclusive), within the attachment.
    case bytes(first: Int64, last: Int64)
    /// A range that starts at or past the end: 416.
    case unsatisfiable

    /// The range `header` asks of an attachment of `size` bytes.
    init(header: String?, size: Int64) {
        guard let header else { self = .whole; return }
        let text = header.trimmingSpaces
        guard text.hasPrefix("bytes="), !text.contains(",") else { self = .whole; return }
        let spec = text.dropFirst("bytes=".count)
        guard let dash = spec.firstIndex(of: "-") else { self = .whole; return }
        let firstText = String(spec[..<dash]).trimmingSpaces
        let lastText = String(spec[spec.index(after: dash)...]).trimmingSpaces
        switch (UploadHeaders.number(firstText), UploadHeaders.number(lastText)) {
        case (let first?, nil) where lastText.isEmpty:
            self = first < size ? .bytes(first: first, last: size - 1) : .unsatisfiable
        case (let first?, let last?):
            guard first <= last else { self = .whole; return }
            self = first < size ? .bytes(first: first, last: min(last, size - 1)) : .unsatisfiable
        case (nil, let suffix?) where firstText.isEmpty:
            guard suffix > 0 else { self = .unsatisfiable; return }
            self = .bytes(first: max(0, size - suffix), last: size - 1)
        default:
            self = .whole
        }
    }
}
