import DocModel
import Foundation
import Testing
@testable import DocCache
import DocTestTraits

/// Every coding error names the field's path, nested maps and array positions included,
/// whoever threw it: the coders, a standard DecodingError, or a type's own check.
@Suite("Codable error paths", .cpuBound)
struct CodableErrorPathTests {
    static let key = try! DocumentKey("invoices/i1")

    static func invoiceFields(lines: [Value]) -> [String: Value] {
        [
            "number": "INV-1", "status": 1, "currency": "EUR", "issuedAt": .timestamp(try! Timestamp(seconds: 0)),
            "customer": .reference(try! DocumentKey("customers/c1")), "lines": .array(lines),
            "taxByRate": ["standard rate": "0.2"], "totalsByCurrency": [:], "paid": false,
        ]
    }

    static let line: Value = ["description": "x", "quantity": 1, "unitPrice": "1.00", "taxRate": "0.2", "tags": []]

    static func line(_ change: (inout [String: Value]) -> Void) -> Value {
        var fields = line.mapValue!
        change(&fields)
        return .map(fields)
    }

    @Test func decodingErrorsNameNestedFieldsWithArrayPositions() throws {
        let decoder = DocumentDecoder()
        // Valid: the fixture itself decodes.
        _ = try decoder.decode(Invoice.self, from: Self.invoiceFields(lines: [Self.line]), documentKey: Self.key)

        let badAmount = Self.invoiceFields(lines: [Self.line, Self.line, Self.line { $0["unitPrice"] = "12,50" }])
        #expect { try decoder.decode(Invoice.self, from: badAmount, documentKey: Self.key) } throws: {
            isDocError($0, at: "invoices/i1 field lines[2].unitPrice", message: "\"12,50\" is not a decimal number")
        }
        let missing = Self.invoiceFields(lines: [Self.line, Self.line { $0["quantity"] = nil }])
        #expect { try decoder.decode(Invoice.self, from: missing, documentKey: Self.key) } throws: {
            isDocError($0, at: "invoices/i1 field lines[1].quantity", message: "missing")
        }
        let tooBig = Self.invoiceFields(lines: [Self.line { $0["quantity"] = .integer(1 << 40) }])
        #expect { try decoder.decode(Invoice.self, from: tooBig, documentKey: Self.key) } throws: {
            isDocError($0, at: "field lines[0].quantity", message: "does not fit in Int32")
        }
        let badTag = Self.invoiceFields(lines: [Self.line { $0["tags"] = ["ok", 5] }])
        #expect { try decoder.decode(Invoice.self, from: badTag, documentKey: Self.key) } throws: {
            isDocError($0, at: "field lines[0].tags[1]", message: "expected a string for String, found integer")
        }
        var badTax = Self.invoiceFields(lines: [])
        badTax["taxByRate"] = ["standard rate": 0.2]
        #expect { try decoder.decode(Invoice.self, from: badTax, documentKey: Self.key) } throws: {
            isDocError($0, at: "field taxByRate.`standard rate`", message: "cannot be read as a Decimal")
        }
        var notALine = Self.invoiceFields(lines: ["a line"])
        #expect { try decoder.decode(Invoice.self, from: notALine, documentKey: Self.key) } throws: {
            isDocError($0, at: "field lines[0]", message: "expected a map, found string")
        }
        notALine["status"] = 7
        #expect { try decoder.decode(Invoice.self, from: notALine, documentKey: Self.key) } throws: {
            isDocError($0, at: "field status", message: "InvoiceStatus")
        }
    }

    @Test func encodingErrorsNameNestedFields() throws {
        struct Account: Codable {
            var name: String
            var balances: [String: [UInt64]]
        }
        struct Ledger: Codable {
            var accounts: [Account]
        }
        let ledger = Ledger(accounts: [Account(name: "a", balances: [:]), Account(name: "b", balances: ["cash": [1, .max]])])
        #expect { try DocumentEncoder().encode(ledger) } throws: {
            isDocError($0, at: "field accounts[1].balances.cash[1]", message: "does not fit in a stored integer")
        }
    }

    /// A type's own validation in `init(from:)`: a `DecodingError` keeps the path it names, any
    /// other error gets the path of the value that threw it.
    @Test func errorsAModelThrowsGetTheirPath() {
        struct Percent: Codable {
            var value: Int
            init(from decoder: any Decoder) throws {
                value = try decoder.singleValueContainer().decode(Int.self)
                guard (0...100).contains(value) else {
                    throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\(value) is not a percentage"))
                }
            }
        }
        struct Code: Codable {
            var text: String
            init(from decoder: any Decoder) throws {
                text = try decoder.singleValueContainer().decode(String.self)
                _ = try DocumentKey(text)   // throws a DocError without a location
            }
        }
        struct Rates: Codable {
            var discounts: [Percent]
            var codes: [String: Code]
        }
        #expect { try DocumentDecoder().decode(Rates.self, from: ["discounts": [5, 150], "codes": [:]]) } throws: {
            isDocError($0, at: "field discounts[1]", message: "150 is not a percentage")
        }
        #expect { try DocumentDecoder().decode(Rates.self, from: ["discounts": [], "codes": ["x": "no-slash"]]) } throws: {
            isDocError($0, at: "field codes.x")
        }
    }
}
