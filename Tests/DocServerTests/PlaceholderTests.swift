import Testing

@Suite struct PlaceholderTests {
    @Test func builds() { #expect(1 + 1 == 2) }
}
