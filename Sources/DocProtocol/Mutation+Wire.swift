internal import DocModel

// A mutation on the wire:
//   {"path": "users/alice",
//    "kind": "set" | "patch" | "delete" | "tombstone" | "verify",
//    "data": {…},                       set and patch (patch: optional, default {})
//    "mask": ["name", "address.city"],   patch only, required: the fields the patch writes
//                                        (a masked field absent from data is deleted)
//    "transforms": [T, …],               optional, applied in order after the write
//    "precondition": {"exists": true} | {"updateTime": 1714557600000000}}   optional
// A transform T is {"field": "n", "op": "increment", "operand": 1},
// {"field": "at", "op": "serverTimestamp"}, {"field": "tags", "op": "arrayUnion",
// "elements": […]} or {"field": "tags", "op": "arrayRemove", "elements": […]}.

extension Mutation {
    var wireValue: Value {
        var data: Value?
        var mask: Value?
        let kindName: String
        switch kind {
        case .set(let d):
            kindName = "set"
            data = .map(d.fields)
        case .patch(let d, let m):
            kindName = "patch"
            data = .map(d.fields)
            mask = .array(m.paths.map { .string($0.canonicalString) })
        case .delete: kindName = "delete"
        case .tombstone: kindName = "tombstone"
        case .verify: kindName = "verify"
        }
        return Wire.object([
            ("path", .string(key.path.canonicalString)),
            ("kind", .string(kindName)),
            ("data", data),
            ("mask", mask),
            ("transforms", fieldTransforms.isEmpty ? nil : .array(fieldTransforms.map(\.wireValue))),
            ("precondition", precondition.wireValue),
        ])
    }

    /// Reads a mutation and validates it as the server will apply it
    /// (``Mutation/validate()``: document limits, masks, transforms).
    init(wire value: Value, at path: String) throws(DocError) {
        let object = try WireObject(value, at: path)
        try object.allowOnly(["path", "kind", "data", "mask", "transforms", "precondition"])
        let key = try Wire.documentKey(try object.string("path"), at: object.at("path"))
        let kindName = try object.string("kind")
        func data(required: Bool) throws(DocError) -> ObjectValue {
            guard let v = object.optionalValue("data") else {
                if required { throw Wire.error("missing field \"data\"", at: path) }
                return ObjectValue()
            }
            guard case .map(let fields) = v else {
                throw Wire.error("expected an object of fields, found \(Wire.describe(v))", at: object.at("data"))
            }
            return ObjectValue(fields)
        }
        func forbid(_ fields: [String]) throws(DocError) {
            for field in fields where object.has(field) {
                throw Wire.error("a \(kindName) mutation has no \"\(field)\"", at: path)
            }
        }
        let kind: Kind
        switch kindName {
        case "set":
            try forbid(["mask"])
            kind = .set(try data(required: true))
        case "patch":
            var paths: [FieldPath] = []
            for (i, p) in try object.array("mask").enumerated() {
                let at = object.at("mask") + "[\(i)]"
                paths.append(try Wire.fieldPath(try Wire.string(p, at: at), at: at))
            }
            kind = .patch(try data(required: false), FieldMask(paths))
        case "delete":
            try forbid(["data", "mask"])
            kind = .delete
        case "tombstone":
            try forbid(["data", "mask"])
            kind = .tombstone
        case "verify":
            try forbid(["data", "mask"])
            kind = .verify
        default:
            throw Wire.error("unknown mutation kind \"\(kindName)\" (expected set, patch, delete, tombstone or verify)",
                             at: object.at("kind"))
        }
        var transforms: [FieldTransform] = []
        for (i, t) in try object.optionalArray("transforms").enumerated() {
            transforms.append(try FieldTransform(wire: t, at: object.at("transforms") + "[\(i)]"))
        }
        let precondition = try object.optionalObject("precondition").map { o throws(DocError) in try Precondition(wire: o) } ?? .none
        self.init(key: key, kind: kind, fieldTransforms: transforms, precondition: precondition)
        do {
            try validate()
        } catch {
            throw Wire.error(error.message, at: path + (error.location.map { " (\($0))" } ?? ""))
        }
    }
}

extension FieldTransform {
    var wireValue: Value {
        let field = Value.string(path.canonicalString)
        switch operation {
        case .serverTimestamp:
            return .map(["field": field, "op": "serverTimestamp"])
        case .increment(let operand):
            return .map(["field": field, "op": "increment", "operand": operand])
        case .arrayUnion(let elements):
            return .map(["field": field, "op": "arrayUnion", "elements": .array(elements)])
        case .arrayRemove(let elements):
            return .map(["field": field, "op": "arrayRemove", "elements": .array(elements)])
        }
    }

    init(wire value: Value, at path: String) throws(DocError) {
        let object = try WireObject(value, at: path)
        let field = try Wire.fieldPath(try object.string("field"), at: object.at("field"))
        let op = try object.string("op")
        switch op {
        case "serverTimestamp":
            try object.allowOnly(["field", "op"])
            self.init(field, .serverTimestamp)
        case "increment":
            try object.allowOnly(["field", "op", "operand"])
            let operand = try object.value("operand")
            guard operand.isNumber else {
                throw Wire.error("increment needs an integer or double operand, found \(Wire.describe(operand))",
                                 at: object.at("operand"))
            }
            self.init(field, .increment(operand))
        case "arrayUnion", "arrayRemove":
            try object.allowOnly(["field", "op", "elements"])
            let elements = try object.array("elements")
            self.init(field, op == "arrayUnion" ? .arrayUnion(elements) : .arrayRemove(elements))
        default:
            throw Wire.error(
                "unknown transform \"\(op)\" (expected serverTimestamp, increment, arrayUnion or arrayRemove)",
                at: object.at("op"))
        }
    }
}

extension Precondition {
    var wireValue: Value? {
        switch self {
        case .none: return nil
        case .exists(let e): return .map(["exists": .boolean(e)])
        case .updateTime(let v): return .map(["updateTime": Wire.version(v)])
        }
    }

    init(wire object: WireObject) throws(DocError) {
        try object.allowOnly(["exists", "updateTime"])
        switch (object.has("exists"), object.has("updateTime")) {
        case (true, false): self = .exists(try object.bool("exists"))
        case (false, true): self = .updateTime(try object.version("updateTime"))
        case (true, true): throw Wire.error("a precondition is either \"exists\" or \"updateTime\", not both", at: object.path)
        case (false, false): throw Wire.error("a precondition needs \"exists\" or \"updateTime\"", at: object.path)
        }
    }
}
