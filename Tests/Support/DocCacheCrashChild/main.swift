// A child process for the DocCache durability tests.
//
// usage: doccache-crash-child DIRECTORY COUNT
// Opens the store of tenant "crash", user "child" in DIRECTORY and writes COUNT documents
// (`notes/n<i>`, alternating setData, merge, updateData and batches). After each write call
// returns (accepted locally) it prints `accepted <batchID> <path>` and flushes; then prints
// `ready` and waits to be killed. It exits by itself when stdin closes or after 5 minutes, so
// it can never outlive a crashed test run.
//
// usage: doccache-crash-child DIRECTORY COUNT --server URL --token TOKEN
// The syncing mode (IntegrationTests' ClientCrashTests): opens the store of tenant "acme",
// user "child" in DIRECTORY connected to the server at URL with TOKEN, and makes COUNT
// increments of `counters/c1` field `n` (set-merge with increment(1)) alternating with COUNT
// sets of distinct documents `items/i<k>`, printing `accepted <batchID> <path>` as each call
// returns and `committed <batchID>` as the server acknowledges each; then `ready`, and it
// keeps syncing until killed (or stdin closes, or 5 minutes pass).
//
// usage: doccache-crash-child DIRECTORY COUNT --server URL --token TOKEN --rejected
// The rejection mode (IntegrationTests' FailedWriteCrashTests): the same store, COUNT updates
// of documents that do not exist (`missing/m<k>`, each rejected by the server with
// `notFound`), printing `accepted <batchID> <path>` as each call returns and
// `rejected <batchID>` as each rejection arrives; then `ready`, and it waits to be killed.
//
// usage: doccache-crash-child DIRECTORY --attachments-form [--server URL --token TOKEN] FILE...
// The attachments mode (IntegrationTests' AttachmentCrashTests, offline: a server URL nobody
// answers at; AttachmentProxyTests, through a cutting proxy): opens the store of tenant
// "acme", user "child" in DIRECTORY (with the server, if given; none: offline), adds
// each FILE as an `image/jpeg` attachment, printing `attachment <index> <id> <size> <state>` as
// each `add` returns; then commits one batch that sets `kyc/f1` (`name`, `photoCount` and
// `photo<index>` = `.attachment(id)` for each file) and merges `counters/kyc` `forms` +1,
// printing `accepted <batchID> kyc/f1`; then sets `notes/after-form`, printing
// `accepted <batchID> notes/after-form`; prints `pending <batchID> <state>` for each queued
// batch, then `ready`, and waits to be killed (or stdin closes, or 5 minutes pass), syncing
// meanwhile when the server can be reached.
import DocCache
import Foundation

/// Writes a line straight to the pipe (no stdio buffering), so the parent sees it at once.
/// Says "ready" and waits for the test's SIGKILL (exits by itself after 300 s).
func waitForKill() async -> Never {
    report("ready")
    try? await Task.sleep(for: .seconds(300))
    exit(0)
}

/// Reports `error` on stderr and exits 1.
func fail(_ error: any Error) -> Never {
    FileHandle.standardError.write("doccache-crash-child: \(error)\n".data(using: .utf8)!)
    exit(1)
}

func report(_ line: String) {
    FileHandle.standardOutput.write((line + "\n").data(using: .utf8)!)
}

let arguments = CommandLine.arguments
if arguments.count >= 3, arguments[2] == "--attachments-form" {
    await attachmentsForm(directory: arguments[1], options: Array(arguments.dropFirst(3)))
}
let rejecting = arguments.count == 8 && arguments[7] == "--rejected"
let syncing = (arguments.count == 7 || rejecting) && arguments[3] == "--server" && arguments[5] == "--token"
guard arguments.count == 3 || syncing, let count = Int(arguments[2]) else {
    FileHandle.standardError.write("usage: doccache-crash-child DIRECTORY COUNT [--server URL --token TOKEN [--rejected]]\n".data(using: .utf8)!)
    exit(2)
}
Thread.detachNewThread {
    _ = FileHandle.standardInput.readDataToEndOfFile()
    exit(0)
}

if syncing {
    let token = arguments[6]
    do {
        let server = try ServerEndpoint(url: arguments[4]) { token }
        let store = try await DocumentStore.open(directory: arguments[1], tenant: "acme", user: "child", server: server)
        if rejecting {
            for k in 0..<count {
                let missing = try store.document("missing/m\(k)")
                let update = try await missing.updateData(["k": .value(.integer(Int64(k))), "text": .value(.string("typed \(k)"))])
                report("accepted \(update.batchID) \(missing.path)")
                Task {
                    if (try? await update.committed) == nil { report("rejected \(update.batchID)") }
                }
            }
            await waitForKill()
        }
        let counter = try store.document("counters/c1")
        let items = try store.collection("items")
        for k in 0..<count {
            let increment = try await counter.setData(["n": .increment(1)], merge: true)
            report("accepted \(increment.batchID) \(counter.path)")
            let item = try items.document("i\(k)")
            let set = try await item.setData(["k": .value(.integer(Int64(k)))])
            report("accepted \(set.batchID) \(item.path)")
            for handle in [increment, set] {
                Task {
                    if (try? await handle.committed) != nil { report("committed \(handle.batchID)") }
                }
            }
        }
        await waitForKill()
    } catch {
        fail(error)
    }
}

do {
    let store = try await DocumentStore.open(directory: arguments[1], tenant: "crash", user: "child")
    let notes = try store.collection("notes")
    var i = 0
    while i < count {
        let ref = try notes.document("n\(i)")
        switch i % 4 {
        case 0:
            let handle = try await ref.setData(["i": .value(.integer(Int64(i))), "text": .value(.string("note \(i)"))])
            report("accepted \(handle.batchID) \(ref.path)")
        case 1:
            let handle = try await ref.setData(["i": .value(.integer(Int64(i))), "merged": true], merge: true)
            report("accepted \(handle.batchID) \(ref.path)")
        case 2:
            try await ref.setData(["i": .value(.integer(Int64(i)))])
            let handle = try await ref.updateData(["count": .increment(Int64(i)), "at": .serverTimestamp()])
            report("accepted \(handle.batchID - 1) \(ref.path)")
            report("accepted \(handle.batchID) \(ref.path)")
        default:
            var batch = store.batch()
            try batch.setData(["i": .value(.integer(Int64(i)))], for: ref)
            try batch.setData(["of": .value(.string(ref.path))], for: notes.document("n\(i)-extra"))
            let handle = try await batch.commit()
            report("accepted \(handle.batchID) \(ref.path)")
        }
        i += 1
    }
    report("ready")
    try await Task.sleep(for: .seconds(300))
} catch {
    fail(error)
}

/// The offline attachments mode (see the usage at the top). Never returns.
func attachmentsForm(directory: String, options: [String]) async -> Never {
    Thread.detachNewThread {
        _ = FileHandle.standardInput.readDataToEndOfFile()
        exit(0)
    }
    var files = options
    var server: ServerEndpoint?
    do {
        if files.first == "--server" {
            guard files.count >= 4, files[2] == "--token" else {
                FileHandle.standardError.write("usage: doccache-crash-child DIRECTORY --attachments-form [--server URL --token TOKEN] FILE...\n".data(using: .utf8)!)
                exit(2)
            }
            let token = files[3]
            server = try ServerEndpoint(url: files[1]) { token }
            files.removeFirst(4)
        }
        guard !files.isEmpty else {
            FileHandle.standardError.write("usage: doccache-crash-child DIRECTORY --attachments-form [--server URL --token TOKEN] FILE...\n".data(using: .utf8)!)
            exit(2)
        }
        let store = try await DocumentStore.open(directory: directory, tenant: "acme", user: "child", server: server)
        var ids: [AttachmentID] = []
        for (index, file) in files.enumerated() {
            let attachment = try await store.attachments.add(file: file, contentType: "image/jpeg")
            report("attachment \(index) \(attachment.id.hex) \(attachment.size) \(attachment.state.name)")
            ids.append(attachment.id)
        }
        let form = try store.document("kyc/f1")
        var data: [String: FieldValue] = ["name": "Ada Lovelace", "photoCount": .value(.integer(Int64(ids.count)))]
        for (index, id) in ids.enumerated() { data["photo\(index)"] = .attachment(id) }
        var batch = store.batch()
        try batch.setData(data, for: form)
        try batch.setData(["forms": .increment(1)], for: store.document("counters/kyc"), merge: true)
        let submitted = try await batch.commit()
        report("accepted \(submitted.batchID) \(form.path)")
        let note = try store.document("notes/after-form")
        let after = try await note.setData(["text": "written after the form"])
        report("accepted \(after.batchID) \(note.path)")
        for pending in try await store.pendingWrites() { report("pending \(pending.batchID) \(pending.state)") }
        await waitForKill()
    } catch {
        fail(error)
    }
}
