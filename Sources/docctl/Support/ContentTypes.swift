/// The media type `docctl attach` gives a file when `--content-type` is absent: guessed from
/// the file name's extension (case-insensitive), `application/octet-stream` for any other.
enum ContentTypes {
    /// The type of anything not in ``byExtension``.
    static let fallback = "application/octet-stream"

    /// Common extensions of the files apps attach (photos, scans, documents, recordings).
    static let byExtension: [String: String] = [
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif",
        "webp": "image/webp", "heic": "image/heic", "heif": "image/heif", "tif": "image/tiff",
        "tiff": "image/tiff", "bmp": "image/bmp", "svg": "image/svg+xml",
        "pdf": "application/pdf", "json": "application/json", "xml": "application/xml",
        "zip": "application/zip", "gz": "application/gzip",
        "txt": "text/plain", "csv": "text/csv", "md": "text/markdown", "html": "text/html", "htm": "text/html",
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "wav": "audio/wav",
        "mp4": "video/mp4", "mov": "video/quicktime",
    ]

    /// The type for `path`: by its extension (the text after the last `.` of the file name),
    /// else ``fallback``.
    static func guess(for path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return fallback }
        let suffix = name[name.index(after: dot)...].lowercased()
        return byExtension[suffix] ?? fallback
    }
}
