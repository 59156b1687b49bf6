/// The client id the streams send in `hello` and with every batch: the store's persistent id
/// (``Persistence/clientID``), shared by the streams so that a new one
/// (``Persistence/renewClientID()``, after a batch id collision) is used from their next
/// connection on. Used on the client core's actor only, as the streams are.
final class ClientIdentity {
    var current: String

    init(_ current: String) { self.current = current }
}
