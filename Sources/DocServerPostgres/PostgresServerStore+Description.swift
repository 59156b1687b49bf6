extension PostgresServerStore {
    /// `url` as logs and messages may show it: the password replaced by `***`; a URL that
    /// does not parse is shown as `(invalid URL)`, never repeated.
    public static func redacted(_ url: String) -> String {
        (try? PostgresURL(url))?.redacted ?? "(invalid URL)"
    }
}
