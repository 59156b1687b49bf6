import DocModel
import DocServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh directory under the temporary directory, removed by `body`'s end.
private func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("doccache-auth-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// The permission bits of a file or directory.
private func mode(_ path: String) throws -> mode_t {
    var info = stat()
    try #require(stat(path, &info) == 0, "stat \(path) failed")
    return info.st_mode & 0o7777
}

/// The error `loadOrCreate` throws for `path`, or `nil` when it succeeds.
private func loadError(_ path: String, create: Bool = true) -> DocError? {
    do {
        if create {
            _ = try DevelopmentSecret.loadOrCreate(at: path)
        } else {
            _ = try DevelopmentSecret.load(from: path)
        }
        return nil
    } catch {
        return error
    }
}

@Suite("Development secret")
struct DevelopmentSecretTests {
    @Test("a missing secret is created 0600 in 0700 directories, then reused")
    func createThenReuse() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/nested/.docctl/dev-secret"
            let created = try DevelopmentSecret.loadOrCreate(at: path)
            #expect(created.wasCreated)
            #expect(created.path == path)
            #expect(created.bytes.count == DevelopmentSecret.generatedByteCount)
            #expect(Set(created.bytes).count > 8, "random bytes, not a constant")
            #expect(try mode(path) == 0o600)
            #expect(try mode(dir + "/nested/.docctl") == 0o700)
            #expect(try mode(dir + "/nested") == 0o700)

            // The file is one line of base64.
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.hasSuffix("\n"))
            #expect(Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines))
                    .map([UInt8].init) == created.bytes)

            let again = try DevelopmentSecret.loadOrCreate(at: path)
            #expect(!again.wasCreated)
            #expect(again.bytes == created.bytes)
            let loaded = try DevelopmentSecret.load(from: path)
            #expect(loaded.bytes == created.bytes)
            #expect(try mode(path) == 0o600, "reading does not change the mode")

            // No temporary files are left behind.
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir + "/nested/.docctl")
            #expect(leftovers == ["dev-secret"])
        }
    }

    @Test("a server and docctl using the same secret file agree on tokens")
    func serveAndTokenAgree() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/dev-secret"
            let serverSecret = try DevelopmentSecret.loadOrCreate(at: path)
            let verifier = await TokenVerifier(secret: serverSecret)
            let cliSecret = try DevelopmentSecret.loadOrCreate(at: path)
            let minter = await TokenMinter(secret: cliSecret)
            #expect(serverSecret.wasCreated && !cliSecret.wasCreated)
            let token = try await minter.mint(tenant: "acme", uid: "alice", claims: ["admin": true])
            let auth = try await verifier.verify(token)
            #expect(auth.tenant == "acme" && auth.claims["admin"] == true)

            // A different file is a different secret.
            let otherSecret = try DevelopmentSecret.loadOrCreate(at: dir + "/other")
            let other = await TokenVerifier(secret: otherSecret)
            await #expect(throws: DocError.self) { _ = try await other.verify(token) }
        }
    }

    @Test("concurrent creators end up with one secret")
    func concurrentCreation() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/race/dev-secret"
            let secrets = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                for _ in 0..<8 {
                    group.addTask { try DevelopmentSecret.loadOrCreate(at: path).bytes }
                }
                return try await group.reduce(into: [[UInt8]]()) { $0.append($1) }
            }
            #expect(secrets.count == 8)
            #expect(Set(secrets).count == 1)
            #expect(try DevelopmentSecret.load(from: path).bytes == secrets[0])
        }
    }

    @Test("a secret file written by hand (base64, URL-safe, no padding, spaces) is read")
    func handWritten() async throws {
        try await withTemporaryDirectory { dir in
            let bytes: [UInt8] = (0..<48).map { UInt8(($0 * 5 + 250) & 0xFF) }
            let standard = Data(bytes).base64EncodedString()
            let urlSafe = standard.replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            for (i, text) in ["\(standard)\n", "  \(urlSafe)  \r\n"].enumerated() {
                let path = dir + "/secret-\(i)"
                try text.write(toFile: path, atomically: true, encoding: .utf8)
                let secret = try DevelopmentSecret.loadOrCreate(at: path)
                #expect(!secret.wasCreated)
                #expect(secret.bytes == bytes)
            }
        }
    }

    @Test("bad secret files give an error naming the path and are left alone", arguments: [
        ("", "is empty"),
        ("  \n", "is empty"),
        ("c2hvcnQ=\n", "too short: 5 bytes"),
        ("not base64 at all!\n", "does not hold base64"),
    ])
    func badFiles(contents: String, expected: String) async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/dev-secret"
            try contents.write(toFile: path, atomically: true, encoding: .utf8)
            let error = try #require(loadError(path))
            #expect(error.code == .failedPrecondition)
            #expect(error.message.contains(path), "\(error)")
            #expect(error.message.contains(expected), "\(error)")
            #expect(try String(contentsOfFile: path, encoding: .utf8) == contents, "not replaced")
            #expect(loadError(path, create: false)?.message == error.message)
        }
    }

    @Test("an unreadable secret path gives an error naming it")
    func unreadable() async throws {
        try await withTemporaryDirectory { dir in
            // A directory where the file should be.
            let directory = dir + "/dev-secret"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            let error = try #require(loadError(directory))
            #expect(error.message.contains(directory), "\(error)")
            #expect(error.message.contains("cannot read"), "\(error)")

            // A file where a parent directory should be.
            let file = dir + "/plain"
            try "x".write(toFile: file, atomically: true, encoding: .utf8)
            let nested = try #require(loadError(file + "/dev-secret"))
            #expect(nested.message.contains(file + "/dev-secret"), "\(nested)")

            // A file that is too large to be a secret.
            let large = dir + "/large"
            try String(repeating: "A", count: 10_000).write(toFile: large, atomically: true, encoding: .utf8)
            let tooLarge = try #require(loadError(large))
            #expect(tooLarge.message.contains(large) && tooLarge.message.contains("larger than"))
        }
    }

    @Test("load(from:) does not create a missing file")
    func loadDoesNotCreate() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/missing/dev-secret"
            let error = try #require(loadError(path, create: false))
            #expect(error.code == .notFound)
            #expect(error.message.contains(path))
            #expect(!FileManager.default.fileExists(atPath: dir + "/missing"))
        }
    }

    @Test("the default path is ~/.docctl/dev-secret and ~ is expanded in explicit paths")
    func paths() throws {
        let defaultPath = try DevelopmentSecret.defaultPath()
        #expect(defaultPath.hasSuffix("/.docctl/dev-secret"))
        #expect(defaultPath.hasPrefix("/"))
        let error = try #require(loadError("~/.doccache-auth-test-\(UUID().uuidString)/s", create: false))
        #expect(error.code == .notFound)
        #expect(!error.message.contains("~"), "\(error)")
        if let home = ProcessInfo.processInfo.environment["HOME"], !home.isEmpty {
            let expected = (home.hasSuffix("/") ? home : home + "/") + ".docctl/dev-secret"
            #expect(defaultPath == expected)
            #expect(error.message.contains(home), "\(error)")
        }
    }

    @Test("the secret's bytes never appear in its descriptions")
    func redacted() async throws {
        try await withTemporaryDirectory { dir in
            let secret = try DevelopmentSecret.loadOrCreate(at: dir + "/s")
            let encoded = Data(secret.bytes).base64EncodedString()
            var dumped = ""
            dump(secret, to: &dumped)
            for text in [secret.description, String(reflecting: secret), "\(secret)", dumped] {
                #expect(!text.contains(encoded))
                #expect(!text.contains(String(describing: secret.bytes)))
                #expect(text.contains("32"), "\(text)")
            }
        }
    }
}
