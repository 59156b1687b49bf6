internal import DocModel

// An error on the wire:
//   {"code": 9, "name": "failedPrecondition", "message": "…", "location": "users/alice"}
// `code` is the gRPC / Firestore status code (0…16) and decides; `name` is its name, for
// people reading frames, and must agree with `code` when present; `location` is optional.

extension DocError {
    var wireValue: Value {
        Wire.object([
            ("code", .integer(Int64(code.rawValue))),
            ("name", .string(code.name)),
            ("message", .string(message)),
            ("location", location.map { .string($0) }),
        ])
    }

    init(wire value: Value, at path: String) throws(DocError) {
        let object = try WireObject(value, at: path)
        try object.allowOnly(["code", "name", "message", "location"])
        let number = try object.int("code", in: 0...16)
        guard let code = DocError.Code(rawValue: number) else {
            throw Wire.error("unknown status code \(number)", at: object.at("code"))
        }
        if let name = try object.optionalString("name"), DocError.Code(name: name) != code {
            throw Wire.error("status name \"\(name)\" does not match code \(number) (\(code.name))", at: object.at("name"))
        }
        self.init(code, try object.string("message"), at: try object.optionalString("location"))
    }
}
