import Foundation
import Testing
@testable import DocProtocol
import DocTestTraits

/// Every example frame in docs/protocol.md is a valid frame.
@Suite(.cpuBound) struct DocumentationTests {
    static func examples(_ kind: String) throws -> [String] {
        let docs = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/protocol.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```json \(kind)" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test func clientExamplesDecode() throws {
        let examples = try Self.examples("client")
        #expect(examples.count >= 7)
        var types = Set<String>()
        for example in examples {
            do {
                types.insert(try FrameDecoder().decodeClientMessage(example).type)
            } catch {
                Issue.record("\(error): \(example)")
            }
        }
        #expect(types == Set(ClientMessage.types))
    }

    @Test func serverExamplesDecode() throws {
        let examples = try Self.examples("server")
        var types = Set<String>()
        for example in examples {
            do {
                types.insert(try FrameDecoder().decodeServerMessage(example).type)
            } catch {
                Issue.record("\(error): \(example)")
            }
        }
        #expect(types == Set(ServerMessage.types))
    }
}
