/// A geographic point. Latitude in [-90, 90], longitude in [-180, 180]; ordered by latitude,
/// then longitude.
public struct GeoPoint: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Degrees north of the equator, in [-90, 90].
    public let latitude: Double
    /// Degrees east of the prime meridian, in [-180, 180].
    public let longitude: Double

    /// Creates a point from degrees; `-0.0` is stored as `0.0`.
    ///
    /// - Throws: `invalidArgument` when either coordinate is not finite or is out of range.
    public init(latitude: Double, longitude: Double) throws(DocError) {
        guard latitude.isFinite, (-90.0...90.0).contains(latitude) else {
            throw .invalid("latitude must be a finite number in [-90, 90], got \(latitude)")
        }
        guard longitude.isFinite, (-180.0...180.0).contains(longitude) else {
            throw .invalid("longitude must be a finite number in [-180, 180], got \(longitude)")
        }
        self.latitude = latitude + 0.0   // normalizes -0.0
        self.longitude = longitude + 0.0
    }

    public static func < (a: GeoPoint, b: GeoPoint) -> Bool {
        (a.latitude, a.longitude) < (b.latitude, b.longitude)
    }

    public var description: String { "(\(latitude), \(longitude))" }
}
