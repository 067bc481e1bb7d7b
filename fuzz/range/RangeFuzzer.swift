// libFuzzer harness for the two byte-range parsers: `Range` on downloads (ByteRange.resolve, Downloads/ByteRange.swift)
// and `Content-Range` on GCS resumable chunks (ContentRange, GCS/GCSUploads.swift). The input is a header value,
// resolved against several object sizes. Properties:
// - ByteRange: a partial answer always satisfies 0 <= start <= end < size; an empty object is always served
//   whole; the answer agrees with a reference reading of RFC 9110 14.1.2 / 14.2 (one range, digits only, end
//   clamped to the object, suffix longer than the object selects all of it, unsatisfiable only when the first
//   byte is at or past the end), except where the lead is changing ByteRange.swift (numbers that are not plain
//   in-range decimals: RANGE-1..3 in RESULTS.md), which are tolerated unless FUZZ_STRICT=1;
// - ContentRange: first >= 0, last >= first, total >= 0, and the arithmetic the upload handler does on them cannot
//   overflow (last + 1, and first + a body length of up to 18 digits); it agrees with a reference reading of RFC
//   9110 14.4 (`bytes first-last/total`, `bytes */total`, `*` totals, and Node's `bytes first-*/total`), and it
//   re-parses from its own canonical form.
@testable import SiloServerKit

private func isDigits(_ text: Substring) -> Bool { !text.isEmpty && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }

/// A decimal that may be too large for Int64: nil when not digits, .max when it overflows.
private func decimal(_ text: Substring) -> Int64? {
    guard isDigits(text) else { return nil }
    var value: Int64 = 0
    for byte in text.utf8 {
        let (times, o1) = value.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times.addingReportingOverflow(Int64(byte - 0x30))
        if o1 || o2 { return .max }
        value = sum
    }
    return value
}

private func trimSpaces(_ text: Substring) -> Substring {
    var t = text
    while t.first == " " { t.removeFirst() }
    while t.last == " " { t.removeLast() }
    return t
}

/// RFC 9110 single-range semantics, as Silo documents them (architecture notes: several or malformed ranges are
/// served whole; start past the end is 416; an empty object is 200).
private func referenceRange(_ header: String, size: Int64) -> ByteRange {
    let trimmed = trimSpaces(header[...])
    guard trimmed.lowercased().hasPrefix("bytes=") else { return .whole }
    let spec = trimmed.dropFirst(6)
    guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
    let first = trimSpaces(spec[..<dash])
    let last = trimSpaces(spec[spec.index(after: dash)...])
    if size == 0 { return .whole }
    if first.isEmpty {
        guard let suffix = decimal(last) else { return .whole }
        if suffix == 0 { return .unsatisfiable }
        return .partial(start: suffix >= size ? 0 : size - suffix, end: size - 1)
    }
    guard let start = decimal(first) else { return .whole }
    guard start < size else { return .unsatisfiable }
    if last.isEmpty { return .partial(start: start, end: size - 1) }
    guard let end = decimal(last) else { return .whole }
    guard end >= start else { return .whole }
    return .partial(start: start, end: min(end, size - 1))
}

/// Which reported ByteRange issue (RESULTS.md) a header can hit, if any: the lead is changing how numbers that are
/// not plain in-range decimals are read.
private func knownRangeIssue(_ header: String) -> String? {
    let spec = trimSpaces(header[...]).dropFirst(6)
    guard let dash = spec.firstIndex(of: "-") else { return nil }
    let first = trimSpaces(spec[..<dash])
    let last = trimSpaces(spec[spec.index(after: dash)...])
    let parts = [first, last].filter { !$0.isEmpty }
    if parts.contains(where: { decimal($0) == .max }) { return "RANGE-2" }  // overflows Int64
    if parts.contains(where: { $0.first == "+" || $0.first == "-" }) { return "RANGE-1" }  // a sign, read by Int64()
    if first.isEmpty && !last.isEmpty && !isDigits(last) { return "RANGE-3" }  // `bytes=-junk`
    return nil
}

private func checkByteRange(_ header: String, size: Int64) {
    let range = ByteRange.resolve(header, size: size)
    let context = "Range \(header.debugDescription) size \(size): \(range)"
    if case .partial(let start, let end) = range {
        require(start >= 0 && start <= end && end < size, "partial outside the object: \(context)")
    }
    if size == 0 { require(range == .whole, "an empty object is not served whole: \(context)") }
    let expected = referenceRange(header, size: size)
    if range != expected {
        let known = knownRangeIssue(header)
        require(
            known.map { tolerated($0, "\(context), reference \(expected)") } ?? false,
            "\(context), reference \(expected)")
    }
}

private struct ExpectedContentRange: Equatable {
    var first: Int64?
    var last: Int64?
    var total: Int64?
}

/// RFC 9110 14.4 `Content-Range` for a request (plus Node's `first-*`), numbers bounded by ContentRange.maxValue:
/// nil when it must be refused.
private func referenceContentRange(_ header: String) -> ExpectedContentRange? {
    let text = trimSpaces(header[...])
    guard text.lowercased().hasPrefix("bytes "), let slash = text.lastIndex(of: "/") else { return nil }
    let span = trimSpaces(text.dropFirst(6)[..<slash])
    let totalText = trimSpaces(text[text.index(after: slash)...])
    var total: Int64?
    // Numbers past ContentRange.maxValue (4 EiB) are refused, so the handler's sums cannot overflow.
    if totalText != "*" {
        guard let value = decimal(totalText), value <= ContentRange.maxValue else { return nil }
        total = value
    }
    if span == "*" { return ExpectedContentRange(total: total) }
    let bounds = span.split(separator: "-", omittingEmptySubsequences: false)
    guard bounds.count == 2, let first = decimal(bounds[0]), first <= ContentRange.maxValue else { return nil }
    if bounds[1] == "*" { return ExpectedContentRange(first: first, total: total) }
    guard let last = decimal(bounds[1]), last <= ContentRange.maxValue, last >= first else { return nil }
    return ExpectedContentRange(first: first, last: last, total: total)
}

private func checkContentRange(_ header: String) {
    let parsed = try? ContentRange(header)
    let context = "Content-Range \(header.debugDescription): \(parsed.map { "\($0)" } ?? "refused")"
    guard let parsed else {
        require(referenceContentRange(header) == nil, "\(context), reference \(referenceContentRange(header)!)")
        return
    }
    if let first = parsed.first {
        require(first >= 0, context)
        // The handler computes `first + Content-Length - 1` (Content-Length has at most 18 digits).
        require(
            !first.addingReportingOverflow(999_999_999_999_999_999).overflow, "first + length overflows: \(context)")
    }
    if let last = parsed.last {
        require(parsed.first != nil && last >= parsed.first!, context)
        require(last < .max, "last + 1 overflows: \(context)")
    }
    if let total = parsed.total { require(total >= 0, context) }
    let mine = ExpectedContentRange(first: parsed.first, last: parsed.last, total: parsed.total)
    if referenceContentRange(header) != mine {
        let reference = referenceContentRange(header).map { "\($0)" } ?? "refused"
        fail("\(context), reference \(reference)")
    }
    // Its canonical form parses back to it.
    let span = parsed.first.map { "\($0)-\(parsed.last.map(String.init) ?? "*")" } ?? "*"
    let canonical = "bytes \(span)/\(parsed.total.map(String.init) ?? "*")"
    require((try? ContentRange(canonical)) == parsed, "canonical \(canonical) does not re-parse: \(context)")
}

private let sizes: [Int64] = [0, 1, 2, 3, 10, 100, 1000, 1 << 20, 1 << 40, Int64.max - 1, Int64.max]

@_cdecl("LLVMFuzzerTestOneInput")
public func rangeFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let header = String(decoding: input, as: UTF8.self)
    var random = InputRandom(input)
    require(ByteRange.resolve(nil, size: 10) == .whole, "no header is not whole")
    for objectSize in sizes + [Int64(random.below(1 << 16)), Int64(bitPattern: random.next() >> 1)] {
        checkByteRange(header, size: objectSize)
    }
    checkContentRange(header)
    return 0
}
