internal import DocModel

// A document on the wire:
//   {"path": "users/alice", "fields": {…}, "version": 1714557600000000, "createTime": 1714557600000000}
// `fields` is the document's data in canonical JSON with typed escapes; versions are commit
// versions in microseconds.

extension Document {
    /// The wire form of the document (pending-write flags are never sent).
    var wireValue: Value {
        Wire.object([
            ("path", .string(key.path.canonicalString)),
            ("fields", .map(data.fields)),
            ("version", Wire.version(version)),
            ("createTime", Wire.version(createTime)),
        ])
    }

    /// Reads a document from its wire form.
    init(wire value: Value, at path: String) throws(DocError) {
        let object = try WireObject(value, at: path)
        try object.allowOnly(["path", "fields", "version", "createTime"])
        let key = try Wire.documentKey(try object.string("path"), at: object.at("path"))
        guard case .map(let fields) = try object.value("fields") else {
            throw Wire.error("expected an object of fields", at: object.at("fields"))
        }
        self.init(
            key: key, data: ObjectValue(fields), version: try object.version("version"),
            createTime: try object.version("createTime"))
    }
}

extension Wire {
    /// Parses a document path, naming `path` (the field of the frame) in errors.
    static func documentKey(_ text: String, at path: @autoclosure () -> String) throws(DocError) -> DocumentKey {
        do {
            return try DocumentKey(text)
        } catch {
            throw Wire.error(error.message + (error.location.map { " (\($0))" } ?? ""), at: path())
        }
    }

    /// Parses a resource path, naming `path` in errors.
    static func resourcePath(_ text: String, at path: @autoclosure () -> String) throws(DocError) -> ResourcePath {
        do {
            return try ResourcePath(text)
        } catch {
            throw Wire.error(error.message + (error.location.map { " (\($0))" } ?? ""), at: path())
        }
    }

    /// Parses a field path in canonical form (`a.b`, `` `odd name`.c ``), naming `path` in errors.
    static func fieldPath(_ text: String, at path: @autoclosure () -> String) throws(DocError) -> FieldPath {
        do {
            return try FieldPath(text)
        } catch {
            throw Wire.error(error.message, at: path())
        }
    }

    /// Checks the nesting depth of a value that is not document data (filter values, cursor
    /// positions): at most ``Value/maxDepth`` levels.
    static func checkDepth(_ value: Value, at path: @autoclosure () -> String) throws(DocError) {
        guard value.depth <= Value.maxDepth else {
            throw Wire.error("value nesting is deeper than \(Value.maxDepth) levels", at: path())
        }
    }
}
