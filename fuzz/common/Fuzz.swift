// Shared by every harness (compiled into each one by fuzz/run): failing with a message, known issues that are
// tolerated unless FUZZ_STRICT=1, a deterministic generator seeded by the input (so split points are reproducible
// from the saved input alone), and hex dumps for messages.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a line to standard error (the C `stderr` global is not concurrency-safe in Swift 6).
func printError(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    _ = write(2, &bytes, bytes.count)
}

/// Stops the run; libFuzzer saves the input under fuzz/findings/.
func fail(_ message: String) -> Never {
    printError("PROPERTY FAILED: \(message)")
    abort()
}

/// Fails unless `condition` holds.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fail(message()) }
}

private let strict = getenv("FUZZ_STRICT") != nil
nonisolated(unsafe) private var knownSeen: Set<String> = []

/// A property violation that is already reported (fuzz/RESULTS.md names each id): true, so the harness goes on,
/// unless FUZZ_STRICT=1, which fails on it. The first occurrence of each id is printed once per process.
func tolerated(_ id: String, _ message: @autoclosure () -> String) -> Bool {
    if strict { fail("[\(id)] \(message())") }
    if knownSeen.insert(id).inserted { printError("known issue \(id) (tolerated; FUZZ_STRICT=1 fails): \(message())") }
    return true
}

/// SplitMix64, seeded with FNV-1a of the input: the same input always gets the same split points.
struct InputRandom {
    private var state: UInt64

    init(_ bytes: some Sequence<UInt8>) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        state = hash
    }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound` (0 when bound is 0).
    mutating func below(_ bound: Int) -> Int { bound <= 0 ? 0 : Int(next() % UInt64(bound)) }

    /// Sorted, distinct cut points strictly inside `0..<count` (at most `limit` of them).
    mutating func cuts(in count: Int, limit: Int) -> [Int] {
        guard count > 1 else { return [] }
        var points = Set<Int>()
        for _ in 0..<(1 + below(limit)) { points.insert(1 + below(count - 1)) }
        return points.sorted()
    }
}

/// The pieces of `bytes` between `cuts` (as produced by ``InputRandom/cuts(in:limit:)``).
func pieces(_ bytes: [UInt8], at cuts: [Int]) -> [ArraySlice<UInt8>] {
    var result: [ArraySlice<UInt8>] = []
    var start = 0
    for cut in cuts + [bytes.count] where cut > start {
        result.append(bytes[start..<cut])
        start = cut
    }
    if result.isEmpty { result.append(bytes[0..<0]) }
    return result
}

func hex(_ bytes: some Sequence<UInt8>, limit: Int = 256) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for (i, byte) in bytes.enumerated() {
        if i == limit {
            out += Array("…".utf8)
            break
        }
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// Byte-exact string comparison (Swift's `==` on String is canonical equivalence: "é" == "e\u{301}").
func sameBytes(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool { a.utf8.elementsEqual(b.utf8) }
