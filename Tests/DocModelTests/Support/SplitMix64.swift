import DocTestSupport

/// The package's seeded generator (Tests/Support/DocTestSupport), under its name here.
typealias SplitMix64 = DocTestSupport.SplitMix64
