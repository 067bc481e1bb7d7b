import Foundation
import SiloStorage
import SiloWire
import Synchronization

/// Streams `alt=media` responses into a file or an output sink, for `cp` to local (resumable through a `.part`
/// file and `Range`) and `cat --range`.
final class MediaReceiver: StorageResponseReceiver {
    enum Target {
        case file(FileHandle)
        case sink(any OutputSink)
    }

    private struct State {
        var target: Target
        var status = 0
        var contentRange: String?
        var received: Int64 = 0
        var errorBody = Data()
    }

    private let state: Mutex<State>
    private let onHead: @Sendable (StorageHTTPResponseHead) throws -> Void
    private let onBytes: @Sendable (Int64) -> Void

    init(
        target: Target, onHead: @escaping @Sendable (StorageHTTPResponseHead) throws -> Void = { _ in },
        onBytes: @escaping @Sendable (Int64) -> Void = { _ in }
    ) {
        state = Mutex(State(target: target))
        self.onHead = onHead
        self.onBytes = onBytes
    }

    var status: Int { state.withLock { $0.status } }
    var errorBody: Data { state.withLock { $0.errorBody } }

    func receive(head: StorageHTTPResponseHead) throws {
        state.withLock { $0.status = head.status }
        if (200..<300).contains(head.status) { try onHead(head) }
    }

    func receive(body chunk: Data) throws {
        let total: Int64? = try state.withLock { state in
            guard (200..<300).contains(state.status) else {
                if state.errorBody.count < 64 * 1024 { state.errorBody.append(chunk) }
                return nil
            }
            switch state.target {
            case .file(let handle): try handle.write(contentsOf: chunk)
            case .sink(let sink): sink.write(Array(chunk))
            }
            state.received += Int64(chunk.count)
            return state.received
        }
        if let total { onBytes(total) }
    }

    /// Starts the file over (the server answered 200 to a ranged request).
    func truncateFile() throws {
        try state.withLock { state in
            if case .file(let handle) = state.target {
                try handle.truncate(atOffset: 0)
                try handle.seek(toOffset: 0)
            }
        }
    }
}

extension ServerConnection {
    /// Downloads `address` to `destination` through `<destination>.<generation>.part`: a re-run after an
    /// interruption asks only for the missing bytes (`Range: bytes=N-`). A partial file of another generation is
    /// discarded. The destination appears only when every byte arrived.
    func download(
        _ address: ObjectAddress, to destination: URL, progress: ProgressBar?, stderr: any OutputSink
    ) async throws {
        let metadata = try await metadataJSON(address)
        let size = metadata["size"]?.int64Value ?? -1
        let generation = metadata["generation"]?.int64Value ?? 0
        let fm = FileManager.default
        let directory = destination.deletingLastPathComponent()
        try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        let partial = URL(fileURLWithPath: destination.path + ".\(generation).part")
        // Partial files of other generations of the same object are stale.
        let prefix = destination.lastPathComponent + "."
        for name in (try? fm.contentsOfDirectory(atPath: directory.path)) ?? []
        where name.hasPrefix(prefix) && name.hasSuffix(".part") && name != partial.lastPathComponent {
            let middle = name.dropFirst(prefix.count).dropLast(5)
            if !middle.isEmpty, middle.allSatisfy(\.isNumber) {
                try? fm.removeItem(atPath: directory.path + "/" + name)
            }
        }
        if !fm.fileExists(atPath: partial.path) { _ = fm.createFile(atPath: partial.path, contents: nil) }
        let handle = try FileHandle(forWritingTo: partial)
        defer { try? handle.close() }
        var offset = Int64(try handle.seekToEnd())
        if size >= 0, offset > size {
            try handle.truncate(atOffset: 0)
            offset = 0
        }
        if offset > 0 && !(progress?.isDrawing ?? false) {
            stderr.line("silo: resuming \(address) at byte \(offset) of \(size)")
        }
        progress?.update(completed: offset, total: size)
        if offset < size || size < 0 {
            var headers: [String: String] = [:]
            if offset > 0 { headers["Range"] = "bytes=\(offset)-" }
            let base = offset
            let restarted = Mutex(false)
            let receiver = MediaReceiver(
                target: .file(handle),
                onHead: { head in
                    if head.status == 200 && base > 0 { restarted.withLock { $0 = true } }
                },
                onBytes: { received in
                    let start = restarted.withLock { $0 } ? 0 : base
                    progress?.update(completed: start + received)
                })
            // The truncation for a 200 must happen before the first body byte: do it from the head callback's
            // result, checked right after the head arrives.
            let checked = RestartingReceiver(inner: receiver, restartIfFullBody: offset > 0)
            try await stream(
                "GET", Self.v0Path(address, query: "alt=media"), headers: headers, receiver: checked, operation: .read,
                address: address)
            guard (200..<300).contains(receiver.status) else {
                throw ErrorMessages.httpFailure(
                    status: receiver.status, body: receiver.errorBody, operation: .read, address: address,
                    endpoint: endpoint)
            }
        }
        try handle.synchronize()
        let written = Int64(try handle.seekToEnd())
        guard size < 0 || written == size else {
            throw CommandFailure(
                "download of \(address) ended at \(written) of \(size) bytes; run the command again to resume")
        }
        if fm.fileExists(atPath: destination.path) { try fm.removeItem(at: destination) }
        try fm.moveItem(at: partial, to: destination)
        progress?.finish(completed: written)
    }
}

/// Truncates the file when a ranged request is answered with the whole body (200), then forwards everything.
private final class RestartingReceiver: StorageResponseReceiver {
    let inner: MediaReceiver
    let restartIfFullBody: Bool

    init(inner: MediaReceiver, restartIfFullBody: Bool) {
        self.inner = inner
        self.restartIfFullBody = restartIfFullBody
    }

    func receive(head: StorageHTTPResponseHead) throws {
        if restartIfFullBody && head.status == 200 { try inner.truncateFile() }
        try inner.receive(head: head)
    }

    func receive(body chunk: Data) throws { try inner.receive(body: chunk) }
}
