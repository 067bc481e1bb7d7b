import SiloCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A streaming parser for `multipart/related` upload bodies with exactly two parts: metadata JSON, then media — and,
/// in form mode, for `multipart/form-data` POST policy forms: named fields, collected, then a `file` part streamed.
///
/// Pure state machine: feed it chunks of any size (one byte at a time or all at once gives the same events); it
/// holds back at most one delimiter's worth of bytes, so memory does not grow with the media part. As liberal as GCS
///: CRLF or bare LF line endings (gcsfs frames with LF), boundaries bare, in double quotes or in single
/// quotes (gsutil), header names in any case, extra part headers, a preamble, transport padding after delimiters,
/// and an epilogue or none after the closing delimiter.
package struct MultipartParser {
    package enum Event {
        /// The whole first part (bounded by `maxMetadataBytes`).
        case metadata([UInt8])
        /// The media part begins; its `Content-Type`, if any.
        case mediaStart(contentType: String?)
        /// A piece of the media part (the form's `file`), valid only during the callback.
        case mediaBytes(UnsafeRawBufferPointer)
        /// Form mode: a whole field other than `file` (each bounded by `maxMetadataBytes`).
        case field(name: String, value: [UInt8])
        /// Form mode: the `file` part begins, with its `filename` and `Content-Type`. Parts after it are skipped.
        case fileStart(filename: String?, contentType: String?)
    }

    /// Form mode's bounds: how many fields may come before `file`.
    private let maxFields: Int?
    /// Form mode: the name of the field being collected; nil while streaming `file` or skipping.
    private var fieldName: String?
    private var streamingFile = false
    private var fileSeen = false

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
    /// Bytes seen but not yet consumed. Starts with LF so the first delimiter needs no special case.
    private var pending: [UInt8] = [0x0A]
    private var partIndex = -1
    /// Whether the first delimiter line ended in CRLF: then a CR before a later delimiter is framing, not a part's
    /// last byte. With bare-LF framing (gcsfs) a part that ends in CR keeps it. Decided once, so the answer is the
    /// same however the body is cut.
    private var crlfFraming = true
    /// Preamble bytes already dropped (with the CRLF `pending` starts with): the first delimiter must start within
    /// `maxHeaderBytes` of the stream, however the reads cut it.
    private var preambleDropped = 0
    private var metadata: [UInt8] = []
    private(set) var isComplete = false

    /// The delimiter is searched from its LF; a CR right before that LF belongs to it too (CRLF framing), so the
    /// parser holds back a whole delimiter's length of a part, not one byte less.
    init(boundary: String, maxMetadataBytes: Int) {
        delimiter = Array("\n--\(boundary)".utf8)
        self.maxMetadataBytes = maxMetadataBytes
        maxFields = nil
    }

    /// Form mode (`multipart/form-data`): up to `maxFields` fields of at most `maxFieldBytes` each, then `file`.
    package init(formBoundary boundary: String, maxFieldBytes: Int, maxFields: Int) {
        delimiter = Array("\n--\(boundary)".utf8)
        maxMetadataBytes = maxFieldBytes
        self.maxFields = maxFields
    }

    /// Whether the part being read is the media (related mode) or the form's `file`.
    private var streamsPart: Bool { maxFields == nil ? partIndex == 1 : streamingFile }

    /// Extracts the boundary from a `Content-Type` header; nil unless it is `mediaType` (`multipart/related` for
    /// uploads, `multipart/mixed` for batches) with a boundary.
    package static func boundary(fromContentType header: String?, mediaType: String = "multipart/related") -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: ";").map { $0.trimmingCharacters(in: " ") }
        guard let type = parts.first, type.lowercased() == mediaType else { return nil }
        for parameter in parts.dropFirst() {
            guard let eq = parameter.firstIndex(of: "=") else { continue }
            let key = parameter[..<eq].trimmingCharacters(in: " ").lowercased()
            guard key == "boundary" else { continue }
            var value = String(parameter[parameter.index(after: eq)...]).trimmingCharacters(in: " ")
            for quote in ["\"", "'"] where value.count >= 2 && value.hasPrefix(quote) && value.hasSuffix(quote) {
                value = String(value.dropFirst().dropLast())
            }
            guard !value.isEmpty, value.utf8.count <= 200 else { return nil }
            return value
        }
        return nil
    }

    package mutating func feed(_ chunk: UnsafeRawBufferPointer, _ emit: (Event) throws -> Void) throws {
        guard state != .epilogue else { return }
        if try feedMedia(chunk, emit) { return }
        pending.append(contentsOf: chunk)
        try drain(emit)
    }

    /// The fast path for the bulk of the media part: when the chunk holds no delimiter (nor does the held-back tail
    /// joined to its start), its bytes go to `emit` straight from the caller's buffer, with no copy into `pending` and
    /// one vectorized scan. Returns false, having consumed nothing, whenever the general path must decide.
    private mutating func feedMedia(_ chunk: UnsafeRawBufferPointer, _ emit: (Event) throws -> Void) throws -> Bool {
        // A delimiter may start in the last `keep - 1` bytes, and the byte before it may be its CR.
        let keep = delimiter.count
        guard state == .body, streamsPart, chunk.count > 2 * delimiter.count, pending.count <= keep else {
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
    package static func firstDelimiter(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
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
    package mutating func finish() throws {
        guard isComplete else {
            throw StorageError(.invalidArgument, "multipart body ended before its closing delimiter")
        }
        if maxFields != nil {
            guard fileSeen else { throw StorageError(.invalidArgument, "the form has no file field") }
            return
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
                        // CRLF framing: the CR before the delimiter's LF is not part of the body either.
                        let bodyEnd = crlfFraming && at > cursor && pending[at - 1] == 0x0D ? at - 1 : at
                        try deliver(pending[cursor..<bodyEnd], emit)
                        try endPart(emit)
                    }
                    cursor = at + delimiter.count
                    state = .afterDelimiter
                } else {
                    // Keep the tail that could be the start of a delimiter, with the CR that may precede it.
                    let safe = max(cursor, pending.count - delimiter.count)
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
                // Then the line break: CRLF or a bare LF.
                guard i < pending.count else { return }
                if pending[i] == 0x0A {
                    cursor = i + 1
                    if partIndex < 0 { crlfFraming = false }
                } else {
                    guard i + 1 < pending.count else { return }
                    guard pending[i] == 0x0D, pending[i + 1] == 0x0A else {
                        throw StorageError(.invalidArgument, "malformed multipart delimiter line")
                    }
                    cursor = i + 2
                }
                partIndex += 1
                if let maxFields {
                    guard partIndex <= maxFields else {
                        throw StorageError(.invalidArgument, "the form has more than \(maxFields) fields")
                    }
                } else {
                    guard partIndex < 2 else {
                        throw StorageError(
                            .invalidArgument, "multipart body has more than 2 parts; expected metadata and media")
                    }
                }
                state = .headers
            case .headers:
                guard let (headerEnd, bodyStart) = Self.blankLine(in: pending, from: cursor) else {
                    // A blank line yet to come would end after `pending.count`.
                    if pending.count + 1 - cursor > maxHeaderBytes {
                        throw StorageError(.invalidArgument, "multipart part headers exceed \(maxHeaderBytes) bytes")
                    }
                    return
                }
                // The same bound whether the block arrived whole or not: its bytes up to the blank line.
                guard bodyStart - cursor <= maxHeaderBytes else {
                    throw StorageError(.invalidArgument, "multipart part headers exceed \(maxHeaderBytes) bytes")
                }
                let headerBytes = pending[cursor..<headerEnd]
                let contentType = Self.header("content-type", in: headerBytes)
                cursor = bodyStart
                state = .body
                if maxFields != nil {
                    try startField(Self.header("content-disposition", in: headerBytes), contentType, emit)
                } else if partIndex == 1 {
                    try emit(.mediaStart(contentType: contentType))
                }
            case .epilogue:
                cursor = pending.count
                return
            }
        }
    }

    /// Form mode: what the part whose headers just ended is — `file` (streamed), a field (collected), or a part
    /// after `file` (skipped).
    private mutating func startField(
        _ disposition: String?, _ contentType: String?, _ emit: (Event) throws -> Void
    ) throws {
        metadata.removeAll(keepingCapacity: true)
        let parameters = disposition.map(Self.dispositionParameters) ?? [:]
        guard let name = parameters["name"], !name.isEmpty else {
            throw StorageError(.invalidArgument, "a form part has no Content-Disposition name")
        }
        fieldName = nil
        streamingFile = false
        guard !fileSeen else { return }
        if name == "file" {
            fileSeen = true
            streamingFile = true
            try emit(.fileStart(filename: parameters["filename"], contentType: contentType))
        } else {
            fieldName = name
        }
    }

    /// A part's body has ended: the metadata part (related mode) or a form field is complete.
    private mutating func endPart(_ emit: (Event) throws -> Void) throws {
        if maxFields == nil {
            if partIndex == 0 { try emit(.metadata(metadata)) }
            return
        }
        if let name = fieldName { try emit(.field(name: name, value: metadata)) }
        fieldName = nil
        streamingFile = false
    }

    private mutating func deliver(_ bytes: ArraySlice<UInt8>, _ emit: (Event) throws -> Void) throws {
        if maxFields != nil && !streamingFile {
            guard fieldName != nil else { return }
            guard metadata.count + bytes.count <= maxMetadataBytes else {
                throw StorageError(.payloadTooLarge, "a form field exceeds \(maxMetadataBytes) bytes")
            }
            metadata.append(contentsOf: bytes)
        } else if maxFields == nil && partIndex == 0 {
            guard metadata.count + bytes.count <= maxMetadataBytes else {
                throw StorageError(.payloadTooLarge, "multipart metadata part exceeds \(maxMetadataBytes) bytes")
            }
            metadata.append(contentsOf: bytes)
        } else if !bytes.isEmpty {
            try bytes.withUnsafeBytes { try emit(.mediaBytes($0)) }
        }
    }

    /// The end of a part's header lines (where its blank line starts) and where its body starts, lines ending in
    /// CRLF or LF; nil while the blank line has not arrived. A part without headers starts with its blank line.
    static func blankLine(in bytes: [UInt8], from start: Int) -> (headerEnd: Int, bodyStart: Int)? {
        var line = start
        while let lf = bytes[line...].firstIndex(of: 0x0A) {
            if lf == line || (lf == line + 1 && bytes[line] == 0x0D) { return (line, lf + 1) }
            line = lf + 1
        }
        return nil
    }

    /// The part's header `wanted` (lowercase), read line by line as bytes (a `String` would take CR LF as one
    /// Character).
    private static func header(_ wanted: String, in headerBytes: ArraySlice<UInt8>) -> String? {
        for rawLine in headerBytes.split(separator: 0x0A) {
            let line = rawLine.last == 0x0D ? rawLine.dropLast() : rawLine
            guard let colon = line.firstIndex(of: 0x3A) else { continue }
            let name = String(decoding: line[..<colon], as: UTF8.self).trimmingCharacters(in: " ")
            guard name.lowercased() == wanted else { continue }
            return String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: " ")
        }
        return nil
    }

    /// `form-data; name="key"; filename="a;b.txt"`: parameter names lowercased, values unquoted (a quoted value may
    /// hold `;`; browsers send a `"` in a file name as `%22`, and a backslash as itself).
    static func dispositionParameters(_ value: String) -> [String: String] {
        var parameters: [String: String] = [:]
        var characters = Array(value)[...]
        // The disposition type itself.
        while let c = characters.first, c != ";" { characters.removeFirst() }
        while !characters.isEmpty {
            characters.removeFirst()  // ';'
            while characters.first == " " || characters.first == "\t" { characters.removeFirst() }
            var name = ""
            while let c = characters.first, c != "=", c != ";" {
                name.append(c)
                characters.removeFirst()
            }
            var text = ""
            if characters.first == "=" {
                characters.removeFirst()
                if characters.first == "\"" {
                    characters.removeFirst()
                    while let c = characters.popFirst(), c != "\"" { text.append(c) }
                    while let c = characters.first, c != ";" { characters.removeFirst() }
                } else {
                    while let c = characters.first, c != ";" {
                        text.append(c)
                        characters.removeFirst()
                    }
                    text = text.trimmingCharacters(in: " ")
                }
            }
            let key = name.trimmingCharacters(in: " ").lowercased()
            if !key.isEmpty, parameters[key] == nil { parameters[key] = text }
        }
        return parameters
    }
}

/// Index of the first occurrence of `needle` in `haystack` at or after `from`.
package func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
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
    package func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return String(s)
    }
}
