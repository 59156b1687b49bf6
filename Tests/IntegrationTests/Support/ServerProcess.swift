import DocModel
import DocServer
import DocTestSupport
import Foundation
import Synchronization

/// `docctl serve` as a real child process: started on a data directory, read until it prints
/// `listening on …`, killed with SIGKILL or stopped with SIGTERM, started again on the same
/// data and port.
final class ServerProcess: @unchecked Sendable {
    // One test drives a ServerProcess at a time (its methods are called in sequence).
    let dataDirectory: String
    let secretFile: String
    /// Arguments added to every start (a test may change them between starts).
    var extraArguments: [String]
    private(set) var process: SpawnedProcess?
    private(set) var port: Int = 0

    /// The built executables live next to the test bundle's binary.
    static func executable(_ name: String) throws -> URL {
        let exe = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                      ?? CommandLine.arguments[0])
        let candidate = exe.deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw DocError(.notFound, "\(name) is not built next to the test binary", at: candidate.path)
        }
        return candidate
    }

    /// The repository root (for Rules/): ``DocTestSupport/packageRoot``.
    static var repositoryRoot: URL { URL(fileURLWithPath: packageRoot) }

    /// A server with its own data directory; `sharingSecretWith` another one verifies the
    /// same tokens (two instances of one deployment; start that one first, it creates the
    /// secret). `port` 0 lets the first start pick a free port; another port (e.g. from
    /// `freeLoopbackPort()`) is where clients can be pointed before the server first starts.
    init(arguments: [String] = [], sharingSecretWith other: ServerProcess? = nil, port: Int = 0) throws {
        self.port = port
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("doccache-proc-\(UUID().uuidString)")
        dataDirectory = base.appendingPathComponent("data").path
        secretFile = other?.secretFile ?? base.appendingPathComponent("secret").path
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        extraArguments = arguments
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// Starts the server (on the previous port after the first start) and waits for its
    /// `listening on` line, on a thread of its own (``onOwnThread(_:)``): a start takes up to
    /// seconds on a loaded machine, and a blocked thread of the cooperative pool stalls every
    /// other test.
    ///
    /// A start on a given port whose address is in use is tried again for up to 30 s: once a
    /// killed server's port is free, the kernel may give it to an outgoing connection of
    /// another test for a while (see ``LiveServer/restart(samePort:)``).
    func start() async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                return try await onOwnThread { try self.startBlocking() }
            } catch where port != 0 && "\(error)".contains("Address already in use") && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// How long a start may take before the server is killed (a liveness cap).
    static let startLimit: Duration = .seconds(120)

    private func startBlocking() throws(DocError) {
        let arguments = ["serve", "--port", String(port), "--data", dataDirectory, "--secret", secretFile,
                         "--rules", Self.repositoryRoot.appendingPathComponent("Rules/firestore.rules").path,
                         "--log-level", "warning", "--tick-seconds", "1"] + extraArguments
        let process: SpawnedProcess
        do {
            // stderr with stdout: a failed start's reason is in the error below.
            process = try SpawnedProcess(executable: try Self.executable("docctl").path, arguments: arguments,
                                         standardOutput: .pipe, standardError: .standardOutput)
        } catch {
            throw DocError(.unavailable, "cannot start docctl serve: \(error)")
        }
        self.process = process
        let output = process.standardOutput
        // A server that neither prints its address nor ends is killed, which ends the read.
        let started = Atomic<Bool>(false)
        Thread.detachNewThread {
            let deadline = ContinuousClock.now + Self.startLimit
            while !started.load(ordering: .relaxed) && process.isRunning && ContinuousClock.now < deadline { usleep(50_000) }
            if !started.load(ordering: .relaxed) { process.killAndWait() }
        }
        var buffer: [UInt8] = []
        readChunks(of: output, bufferSize: 4_096) { chunk in
            buffer += chunk
            let text = String(decoding: buffer, as: UTF8.self)
            // Complete lines only: a line read in part could end in part of its port.
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            guard let line = lines.first(where: { $0.hasPrefix("listening on http://") }),
                  let colon = line.lastIndex(of: ":"), let port = Int(line[line.index(after: colon)...]) else { return true }
            self.port = port
            started.store(true, ordering: .relaxed)
            return false
        }
        if started.load(ordering: .relaxed) {
            // Whatever else it prints is read and dropped, so that it never blocks on a full pipe.
            Thread.detachNewThread {
                readChunks(of: output, bufferSize: 4_096) { _ in true }
                close(output)
            }
            return
        }
        close(output)
        // It ended (or closed its stdout, or was killed at the cap) without printing its address.
        process.killAndWait()
        self.process = nil
        throw DocError(.unavailable, "docctl serve did not print its address; output: \(String(decoding: buffer, as: UTF8.self))")
    }

    /// SIGKILL: no shutdown, no flush beyond what was already synced.
    func kill() {
        guard let process else { return }
        process.killAndWait()
        self.process = nil
    }

    /// SIGTERM: a graceful shutdown (SIGKILL after 60 s). The wait runs on a thread of its own
    /// (``onOwnThread(_:)``): the shutdown can wait for the server's connections to close,
    /// some of them this process's clients, which need the cooperative pool to answer. A
    /// `defer`, which cannot await, cleans up with ``kill()``.
    func stop() async {
        guard let process else { return }
        self.process = nil
        _ = try? await onOwnThread {
            process.signal(SIGTERM)
            if !process.waitUntilEnded(within: .seconds(60)) { process.killAndWait() }
        }
    }

    func token(tenant: String = "acme", uid: String, claims: [String: Value] = [:]) async throws -> String {
        let secret = try DevelopmentSecret.load(from: secretFile)
        return try await TokenMinter(secret: secret).mint(tenant: tenant, uid: uid, claims: claims)
    }

    func removeData() {
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: dataDirectory).deletingLastPathComponent().path)
    }
}
