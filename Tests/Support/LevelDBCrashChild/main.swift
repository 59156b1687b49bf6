// leveldb-crash-child: the child process of the LevelDB durability tests.
//
//     leveldb-crash-child <database-directory> <count> [--stream]
//
// Opens the database and writes to it, reporting on standard output, unbuffered, one line per
// write that has returned:
//
//     written <key> <value>     the put (or the batch containing it) returned
//     deleted <key>             the delete returned
//     ready                     all writes are done (not in --stream mode)
//
// Keys and values are printable ASCII without spaces. Without --stream it makes <count>
// puts (every fourth with `sync: true`), one delete, then one WriteBatch (puts and an
// overwrite), prints `ready` and sleeps until killed. With --stream it writes forever (puts,
// some synchronous, and a five-put WriteBatch every tenth step), reporting as it goes, until
// killed.
//
// It never ends on its own while the test runs: the test kills it with SIGKILL. As a safety
// net it exits when its standard input reaches end-of-file (the test holds a pipe open; if the
// test process dies the pipe closes) and after five minutes.

import Foundation
import LevelDB

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("leveldb-crash-child: \(message)\n".utf8))
    exit(1)
}

/// Writes one line to standard output at once (one `write(2)`, no buffering).
func report(_ line: String) {
    do {
        try FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
    } catch {
        fail("cannot write to standard output: \(error)")
    }
}

/// The value written under the `index`th key: printable, of varying length (1…700 bytes).
func value(for key: String, index: Int) -> String {
    let length = 1 + (index * 37) % 700
    let seed = "\(key)|"
    var value = ""
    while value.utf8.count < length { value += seed }
    return String(value.prefix(length))
}

func startSafetyNets() {
    // End if the parent goes away (its end of our standard input closes).
    Thread.detachNewThread {
        while true {
            let data = FileHandle.standardInput.availableData
            if data.isEmpty { exit(3) }
        }
    }
    // End after five minutes whatever happens.
    Thread.detachNewThread {
        Thread.sleep(forTimeInterval: 300)
        exit(4)
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let count = Int(arguments[2]), count >= 0 else {
    fail("usage: leveldb-crash-child <database-directory> <count> [--stream]")
}
let path = arguments[1]
let stream = arguments.dropFirst(3).contains("--stream")

startSafetyNets()

let database: Database
do {
    database = try Database.open(path: path, options: Options(createIfMissing: true))
} catch {
    fail("cannot open \(path): \(error)")
}

do {
    if stream {
        var index = 0
        while true {
            if index % 10 == 9 {
                var batch = WriteBatch()
                var written: [(String, String)] = []
                for part in 0..<5 {
                    let key = String(format: "stream-%08d-b%d", index, part)
                    let value = value(for: key, index: index + part)
                    batch.put(key, value)
                    written.append((key, value))
                }
                try database.write(batch, options: WriteOptions(sync: index % 20 == 19))
                for (key, value) in written { report("written \(key) \(value)") }
            } else {
                let key = String(format: "stream-%08d", index)
                let value = value(for: key, index: index)
                try database.put(key, value, options: WriteOptions(sync: index % 7 == 0))
                report("written \(key) \(value)")
            }
            index += 1
        }
    } else {
        for index in 0..<count {
            let key = String(format: "put-%06d", index)
            let value = value(for: key, index: index)
            try database.put(key, value, options: WriteOptions(sync: index % 4 == 0))
            report("written \(key) \(value)")
        }
        if count > 1 {
            let key = String(format: "put-%06d", 1)
            try database.delete(key)
            report("deleted \(key)")
        }
        var batch = WriteBatch()
        var written: [(String, String)] = []
        for index in 0..<max(1, count / 2) {
            let key = String(format: "batch-%06d", index)
            let value = value(for: key, index: index)
            batch.put(key, value)
            written.append((key, value))
        }
        if count > 2 {
            let key = String(format: "put-%06d", 2)
            let value = "overwritten-by-batch"
            batch.put(key, value)
            written.append((key, value))
        }
        try database.write(batch)
        for (key, value) in written { report("written \(key) \(value)") }
        report("ready")
        while true { Thread.sleep(forTimeInterval: 3600) }
    }
} catch {
    fail("write failed: \(error)")
}
