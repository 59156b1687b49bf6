import Testing
@testable import DocProtocol
import DocTestTraits

@Suite(.cpuBound) struct ProtocolVersionTests {
    @Test func currentIsSupported() {
        #expect(ProtocolVersion.supported.contains(.current))
        #expect(!ProtocolVersion.supported.contains(ProtocolVersion(0)))
        #expect(ProtocolVersion(0) < .current)
    }
}
