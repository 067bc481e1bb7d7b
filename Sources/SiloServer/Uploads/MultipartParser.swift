import SiloCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A streaming parser for `multipart/related` upload bodies with exactly two parts: metadata JSON, then media.
///
/// Pure state machine: feed it chunks of any size (one byte at a time or all at once gives the same events); it
/// holds back at most one delimiter's worth of bytes, so memory does not grow with the media part. Accepts quoted
/// boundaries, header names in any case, extra part headers, transport padding after delimiters and a missing
/// CRLF after the closing delimiter.
struct MultipartParser {
    enum Event {
        /// The whole first part (bounded by `maxMetadataBytes`).
        case metadata([UInt8])
        /// The media part begins; its `Content-Type`, if any.
        case mediaStart(contentType: String?)
        /// A piece of the media part, valid only during the callback.
        case mediaBytes(UnsafeRawBufferPointer)
    }

    private enum State {
        case preamble
        case afterDelimiter
        case headers
        case body
        case epilogue
    }

    private let delimiter: [UInt8]
    private let maxMetadataBytes: Int
    private let maxHeaderBytes = 16 << 10
    private var state = State.preamble
    /// Bytes seen but not yet consumed. Starts with CRLF so the first delimiter needs no special case.
    private var pending: [UInt8] = [0x0D, 0x0A]
    private var partIndex = -1
    /// Preamble bytes already dropped (with the CRLF `pending` starts with): the first delimiter must start within
    /// `maxHeaderBytes` of the stream, however the reads cut it.
    private var preambleDropped = 0
    private var metadata: [UInt8] = []
    private(set) var isComplete = false

    init(boundary: String, maxMetadataBytes: Int) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        self.maxMetadataBytes = maxMetadataBytes
    }

    /// Extracts the boundary from a `Content-Type` header; nil unless it is `multipart/related` with a boundary.
    static func boundary(fromContentType header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: ";").map { $0.trimmingCharacters(in: " ") }
        guard let type = parts.first, type.lowercased() == "multipart/related" else { return nil }
        for parameter in parts.dropFirst() {
            guard let eq = parameter.firstIndex(of: "=") else { continue }
            let key = parameter[..<eq].trimmingCharacters(in: " ").lowercased()
            guard key == "boundary" else { continue }
            var value = String(parameter[parameter.index(after: eq)...]).trimmingCharacters(in: " ")
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            guard !value.isEmpty, value.utf8.count <= 200 else { return nil }
            return value
        }
        return nil
    }

    mutating func feed(_ chunk: UnsafeRawBufferPointer, _ emit: (Event) throws -> Void) throws {
        guard state != .epilogue else { return }
        if try feedMedia(chunk, emit) { return }
        pending.append(contentsOf: chunk)
        try drain(emit)
    }

    /// The fast path for the bulk of the media part: when the chunk holds no delimiter (nor does the held-back tail
    /// joined to its start), its bytes go to `emit` straight from the caller's buffer, with no copy into `pending` and
    /// one vectorized scan. Returns false, having consumed nothing, whenever the general path must decide.
    private mutating func feedMedia(_ chunk: UnsafeRawBufferPointer, _ emit: (Event) throws -> Void) throws -> Bool {
        let keep = delimiter.count - 1
        guard state == .body, partIndex == 1, chunk.count > 2 * delimiter.count, pending.count <= keep else {
            return false
        }
        // A delimiter that starts in the held-back tail ends within the chunk's first `keep` bytes.
        if !pending.isEmpty {
            let seam = pending + UnsafeRawBufferPointer(rebasing: chunk[0..<keep])
            if seam.withUnsafeBytes({ Self.firstDelimiter(delimiter, in: $0) }) != nil { return false }
        }
        if Self.firstDelimiter(delimiter, in: chunk) != nil { return false }
        // No delimiter starts before `safe`: everything up to it is media; the rest could be a delimiter's start.
        let safe = chunk.count - keep
        if !pending.isEmpty { try pending.withUnsafeBytes { try emit(.mediaBytes($0)) } }
        try emit(.mediaBytes(UnsafeRawBufferPointer(rebasing: chunk[0..<safe])))
        pending.removeAll(keepingCapacity: true)
        pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[safe...]))
        return true
    }

    /// Offset of the first complete occurrence of `needle` (at least 2 bytes) in `haystack`: memchr finds each
    /// candidate first byte at vector speed, so random media costs about one pass.
    static func firstDelimiter(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        guard let base = haystack.baseAddress, haystack.count >= needle.count else { return nil }
        return needle.withUnsafeBytes { n in
            let first = Int32(n[0])
            let last = haystack.count - n.count  // the last offset where a whole needle fits
            var from = 0
            while from <= last {
                guard let hit = memchr(base + from, first, last - from + 1) else { return nil }
                let at = base.distance(to: UnsafeRawPointer(hit))
                if base.load(fromByteOffset: at + 1, as: UInt8.self) == n[1],
                    memcmp(base + at + 2, n.baseAddress! + 2, n.count - 2) == 0
                {
                    return at
                }
                from = at + 1
            }
            return nil
        }
    }

    /// The body has ended: throws unless the closing delimiter was seen.
    mutating func finish() throws {
        guard isComplete else {
            throw StorageError(.invalidArgument, "multipart body ended before its closing delimiter")
        }
        guard partIndex == 1 else {
            throw StorageError(
                .invalidArgument, "multipart body has \(partIndex + 1) parts; expected 2 (metadata, media)")
        }
    }

    private mutating func drain(_ emit: (Event) throws -> Void) throws {
        var cursor = 0
        defer { pending.removeFirst(cursor) }
        while true {
            switch state {
            case .preamble, .body:
                if let at = find(delimiter, in: pending, from: cursor) {
                    if state == .preamble, preambleDropped + at > maxHeaderBytes {
                        throw StorageError(.invalidArgument, "multipart body does not start with its boundary")
                    }
                    if state == .body {
                        try deliver(pending[cursor..<at], emit)
                        if partIndex == 0 { try emit(.metadata(metadata)) }
                    }
                    cursor = at + delimiter.count
                    state = .afterDelimiter
                } else {
                    // Keep the tail that could be the start of a delimiter.
                    let safe = max(cursor, pending.count - (delimiter.count - 1))
                    if state == .body, safe > cursor { try deliver(pending[cursor..<safe], emit) }
                    if state == .preamble {
                        // A delimiter yet to come starts at `safe` or later.
                        guard preambleDropped + safe <= maxHeaderBytes else {
                            throw StorageError(.invalidArgument, "multipart body does not start with its boundary")
                        }
                        preambleDropped += safe - cursor
                    }
                    cursor = safe
                    return
                }
            case .afterDelimiter:
                guard pending.count - cursor >= 2 else { return }
                if pending[cursor] == 0x2D && pending[cursor + 1] == 0x2D {
                    state = .epilogue
                    isComplete = true
                    cursor = pending.count
                    return
                }
                // Transport padding, then CRLF.
                var i = cursor
                while i < pending.count, pending[i] == 0x20 || pending[i] == 0x09 { i += 1 }
                // Bounded like a header block, so endless padding cannot grow `pending` with the body.
                guard i - cursor <= maxHeaderBytes else {
                    throw StorageError(.invalidArgument, "multipart delimiter line exceeds \(maxHeaderBytes) bytes")
                }
                guard i + 1 < pending.count else { return }
                guard pending[i] == 0x0D, pending[i + 1] == 0x0A else {
                    throw StorageError(.invalidArgument, "malformed multipart delimiter line")
                }
                cursor = i + 2
                partIndex += 1
                guard partIndex < 2 else {
                    throw StorageError(
                        .invalidArgument, "multipart body has more than 2 parts; expected metadata and media")
                }
                state = .headers
            case .headers:
                let headerEnd: Int
                if pending.count - cursor >= 2, pending[cursor] == 0x0D, pending[cursor + 1] == 0x0A {
                    headerEnd = cursor  // no headers at all
                } else if let end = find([0x0D, 0x0A, 0x0D, 0x0A], in: pending, from: cursor) {
                    // The same bound whether the block arrived whole or not: its bytes up to the blank line.
                    guard end + 4 - cursor <= maxHeaderBytes else {
                        throw StorageError(.invalidArgument, "multipart part headers exceed \(maxHeaderBytes) bytes")
                    }
                    headerEnd = end + 2
                } else {
                    // A blank line yet to come would end after `pending.count`.
                    if pending.count + 1 - cursor > maxHeaderBytes {
                        throw StorageError(.invalidArgument, "multipart part headers exceed \(maxHeaderBytes) bytes")
                    }
                    return
                }
                let contentType = Self.contentType(in: pending[cursor..<headerEnd])
                cursor = headerEnd + 2
                state = .body
                if partIndex == 1 { try emit(.mediaStart(contentType: contentType)) }
            case .epilogue:
                cursor = pending.count
                return
            }
        }
    }

    private mutating func deliver(_ bytes: ArraySlice<UInt8>, _ emit: (Event) throws -> Void) throws {
        if partIndex == 0 {
            guard metadata.count + bytes.count <= maxMetadataBytes else {
                throw StorageError(.payloadTooLarge, "multipart metadata part exceeds \(maxMetadataBytes) bytes")
            }
            metadata.append(contentsOf: bytes)
        } else if !bytes.isEmpty {
            try bytes.withUnsafeBytes { try emit(.mediaBytes($0)) }
        }
    }

    private static func contentType(in headerBytes: ArraySlice<UInt8>) -> String? {
        let text = String(decoding: headerBytes, as: UTF8.self)
        for line in text.split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].trimmingCharacters(in: " ").lowercased() == "content-type" {
                return line[line.index(after: colon)...].trimmingCharacters(in: " ")
            }
        }
        return nil
    }
}

/// Index of the first occurrence of `needle` in `haystack` at or after `from`.
func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
    guard let first = needle.first, haystack.count - from >= needle.count else { return nil }
    return haystack.withUnsafeBufferPointer { h in
        needle.withUnsafeBufferPointer { n in
            var i = from
            let last = h.count - n.count
            while i <= last {
                if h[i] == first {
                    var j = 1
                    while j < n.count && h[i + j] == n[j] { j += 1 }
                    if j == n.count { return i }
                }
                i += 1
            }
            return nil
        }
    }
}

extension StringProtocol {
    func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return String(s)
    }
}
