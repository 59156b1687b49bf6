import ArgumentParser

/// A duration on the command line: `90` or `90s`, `15m`, `1h`, `7d`.
struct DurationArgument: ExpressibleByArgument, CustomStringConvertible {
    var seconds: Int64

    init?(argument: String) {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var digits = Substring(argument)
        var scale: Int64 = 1
        if let last = argument.last, let unit = units[last] {
            digits = argument.dropLast()
            scale = unit
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let value = Int64(digits), value >= 0,
              value <= Int64.max / scale else { return nil }
        seconds = value * scale
    }

    init(seconds: Int64) { self.seconds = seconds }

    var duration: Duration { .seconds(seconds) }
    var description: String { "\(seconds)s" }
}
