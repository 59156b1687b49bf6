/// The services a rules file can hold a block for: `service cloud.firestore { … }` (documents)
/// and `service firebase.storage { … }` (attachments). A file holds at most one block of each.
enum RulesService: String, Sendable, CaseIterable {
    /// `service cloud.firestore`: paths under `/databases/{database}/documents`.
    case firestore = "cloud.firestore"
    /// `service firebase.storage`: paths under `/b/{bucket}/o`.
    case storage = "firebase.storage"

    /// The service a `service` statement names, or `nil` for one that is not supported.
    init?(named name: String) { self.init(rawValue: name) }
}
