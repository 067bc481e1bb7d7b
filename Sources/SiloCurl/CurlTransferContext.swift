import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Per-transfer state the C callbacks reach through their `void *userdata`. Lives on the transfer's thread for the
/// duration of one `curl_easy_perform`, which is the only time libcurl calls back, so callbacks get it unretained.
final class CurlTransferContext {
    let handler: any CurlResponseHandler
    let control: CurlTransferControl
    let source: CurlBodySource?

    /// The first error a handler or the body source threw; it replaces libcurl's "aborted" result.
    var failure: (any Error)?
    /// The response being parsed from header lines; delivered at the blank line that ends a final (non-1xx) head.
    private var status = 0
    private var headers: [CurlHeader] = []
    private(set) var headDelivered = false

    init(handler: any CurlResponseHandler, control: CurlTransferControl, source: CurlBodySource?) {
        self.handler = handler
        self.control = control
        self.source = source
    }

    /// Runs a handler call; false (after recording the error) if the transfer must stop.
    func deliver(_ body: () throws -> Void) -> Bool {
        guard failure == nil, !control.isAborted else { return false }
        do {
            try body()
            return true
        } catch {
            failure = error
            return false
        }
    }

    /// One raw header line from libcurl (status line, header, or the empty line ending a head).
    func headerLine(_ line: String) -> Bool {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("HTTP/") {
            // A new head begins (after a 1xx or a redirect): forget the previous one.
            let parts = trimmed.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            headers = []
            return true
        }
        if trimmed.isEmpty {
            guard status >= 200, !headDelivered else { return true }
            headDelivered = true
            let head = CurlResponseHead(status: status, headers: headers)
            return deliver { try handler.receive(head: head) }
        }
        if let colon = trimmed.firstIndex(of: ":") {
            let name = String(trimmed[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(trimmed[trimmed.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            headers.append(CurlHeader(name, value))
        }
        return true
    }

    /// Delivers a head synthesised from libcurl's status when the server sent none we could parse.
    func deliverHeadIfNeeded(status fallback: Int) -> Bool {
        guard !headDelivered else { return true }
        headDelivered = true
        let head = CurlResponseHead(status: status >= 200 ? status : fallback, headers: headers)
        return deliver { try handler.receive(head: head) }
    }
}

@available(*, unavailable) extension CurlTransferContext: Sendable {}

/// A request body being read by libcurl: bytes, a file slice or a caller's reader.
final class CurlBodySource {
    private enum Storage {
        case bytes(Data, position: Int)
        case file(FileHandle, remaining: Int64)
        case reader(@Sendable (UnsafeMutableRawBufferPointer) throws -> Int)
    }
    private var storage: Storage

    init?(_ body: CurlRequestBody) throws {
        switch body {
        case .none:
            return nil
        case .bytes(let data):
            storage = .bytes(data, position: 0)
        case .file(let path, let offset, let length):
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            try handle.seek(toOffset: UInt64(offset))
            storage = .file(handle, remaining: length)
        case .reader(_, let read):
            storage = .reader(read)
        }
    }

    deinit {
        if case .file(let handle, _) = storage { try? handle.close() }
    }

    /// Fills `buffer` with the next bytes; 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        switch storage {
        case .bytes(let data, let position):
            let count = min(buffer.count, data.count - position)
            guard count > 0 else { return 0 }
            data.withUnsafeBytes { bytes in
                buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + position, byteCount: count)
            }
            storage = .bytes(data, position: position + count)
            return count
        case .file(let handle, let remaining):
            let want = Int(min(Int64(buffer.count), remaining))
            guard want > 0 else { return 0 }
            let count = try Self.readFile(handle, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]))
            guard count > 0 else {
                throw CocoaError(
                    .fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "The file ended \(remaining) bytes early"])
            }
            storage = .file(handle, remaining: remaining - Int64(count))
            return count
        case .reader(let read):
            return try read(buffer)
        }
    }

    private static func readFile(_ handle: FileHandle, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            #if canImport(Glibc)
            let n = Glibc.read(handle.fileDescriptor, buffer.baseAddress, buffer.count)
            #else
            let n = Darwin.read(handle.fileDescriptor, buffer.baseAddress, buffer.count)
            #endif
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }
}

@available(*, unavailable) extension CurlBodySource: Sendable {}
