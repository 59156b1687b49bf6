extension Duration {
    /// The duration in whole microseconds (rounded toward zero), the unit of timestamps'
    /// arithmetic and of the server's clock and versions.
    package var wholeMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
