internal import DocModel

/// Writes frames: each message as one canonical JSON object (no whitespace, keys sorted,
/// DocModel's typed escapes for timestamps, bytes, references, geo points and non-finite
/// doubles; doubles always with a `.` or an exponent, so they read back as doubles).
///
/// ``FrameDecoder`` reads every frame written here back to an equal message.
public enum FrameEncoder {
    /// The frame of a client message, as UTF-8 bytes.
    public static func encode(_ message: ClientMessage) -> [UInt8] { message.frameValue.jsonBytes }

    /// The frame of a server message, as UTF-8 bytes.
    public static func encode(_ message: ServerMessage) -> [UInt8] { message.frameValue.jsonBytes }

    /// The frame of a client message, as text (for WebSocket text frames).
    public static func string(_ message: ClientMessage) -> String { message.frameValue.jsonString }

    /// The frame of a server message, as text (for WebSocket text frames).
    public static func string(_ message: ServerMessage) -> String { message.frameValue.jsonString }
}
