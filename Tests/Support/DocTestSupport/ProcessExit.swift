public import Foundation

/// Waits until `Process` has seen `process` end, at most `limit`; then reaps the child itself.
///
/// Not `waitUntilExit`: it spins on the run loop until a Dispatch worker delivers the child's
/// exit, and with the (2-thread, on these machines) cooperative pool blocked by waiting tests
/// none may come. In one `make test` run a killed child stayed a zombie while the test process
/// spun for 15 minutes. After `limit`, `waitpid` reaps the child here, so no zombie is left and
/// the caller goes on (`Process` may then still report it running). Returns whether the child
/// has ended (false: it still runs after `limit`).
@discardableResult
public func awaitExit(of process: Process, within limit: Duration = .seconds(10)) -> Bool {
    let pid = process.processIdentifier
    let deadline = ContinuousClock.now + limit
    while process.isRunning && ContinuousClock.now < deadline { usleep(2_000) }
    guard process.isRunning else { return true }
    var status: Int32 = 0
    return waitpid(pid, &status, WNOHANG) == pid
}
