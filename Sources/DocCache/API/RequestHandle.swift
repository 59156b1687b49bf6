import DocModel

/// A submitted request: its id and its status as it changes.
///
/// Obtain one from ``DocumentStore/submitRequest(type:params:base:)`` or, after an app
/// restart, from ``DocumentStore/request(id:)``. The request is an ordinary queued write, so it
/// survives restarts and offline periods like any other.
public struct RequestHandle: Sendable {
    /// The request's id (a UUIDv7 made on this device): the server processes each id once.
    public let id: String
    /// The request document, `requests/{id}`.
    public let reference: DocumentReference
    /// The local write that created it (nil for a handle re-obtained by id).
    public let write: WriteHandle?

    /// The status now and after every change — `pendingLocal` → `pendingServer` →
    /// `applied(result)` | `rejected(code, message)` — ending after the final one. Consecutive
    /// repeats are dropped. Works offline (it reads the cache) and across restarts.
    public var status: AsyncThrowingStream<RequestStatus, any Error> {
        let snapshots = reference.snapshots(includeMetadataChanges: true)
        let write = self.write
        return AsyncThrowingStream { continuation in
            let task = Task {
                var last: RequestStatus?
                do {
                    for try await snapshot in snapshots {
                        var status = RequestStatus(snapshot)
                        if case .rejected(.notFound, _) = status {
                            if let write, case .failure(let error)? = write.tracker.result {
                                // The create was refused: report the server's reason.
                                status = .rejected(code: error.code, message: error.message)
                            } else if snapshot.metadata.isFromCache {
                                continue   // not in this cache (yet): wait for the server's answer
                            }
                        }
                        if status != last {
                            continuation.yield(status)
                            last = status
                        }
                        if status.isFinal { break }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Waits for the final status (applied or rejected).
    public func result() async throws -> RequestStatus {
        var final: RequestStatus?
        for try await status in status { final = status }
        guard let final else { throw DocError(.cancelled, "the status of request \(id) ended without a final state") }
        return final
    }
}
