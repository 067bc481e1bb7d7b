import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// Where an upload request's body goes in its object, from its head: a single-shot upload (media, multipart) starts
/// at 0 and is final; a resumable chunk starts where its `Content-Range` says.
struct UploadPosition {
    /// A request on a resumable session URL (`upload_id=`).
    var isChunk = false
    /// The request that starts a resumable session (its body is metadata, not object bytes).
    var isSessionStart = false
    /// A resumable status query (`Content-Range: bytes */…`): no object bytes.
    var isStatusQuery = false
    /// The object offset of the body's first byte.
    var start: Int64 = 0
    /// The body's last byte is the object's last (the request finalizes the object).
    var isFinal = true

    init(_ head: HTTPRequestHead) {
        guard let query = try? QueryParameters(head) else { return }
        if !query.contains("upload_id") {
            isSessionStart = query["uploadType"] == "resumable"
            return
        }
        isChunk = true
        guard let header = head.headers["Content-Range"] else { return }  // the whole object in one request
        guard let range = try? ContentRange(header), let first = range.first else {
            isStatusQuery = true
            return
        }
        start = first
        let length = head.headers["Content-Length"].flatMap { Int64($0) }
        let last = range.last ?? length.map { first + $0 - 1 }
        isFinal = range.total != nil && last.map { $0 + 1 } == range.total
    }
}

/// The upload faults: `return-NNN-after-NK` (the object's bytes up to N KiB are taken, then NNN; a resumable chunk's
/// part before the point is persisted, as GCS keeps what arrived) and, for uploads, `stall-for-Ts-after-NK` (the
/// answer to the request that brings the object past N KiB comes T seconds late). As in storage-testbench, the
/// instruction stays pending until an upload request reaches its point.
final class UploadFaultSink: RequestBodySink {
    private let inner: any RequestBodySink
    private let instruction: FaultInstruction
    private let target: FaultTarget
    private let position: UploadPosition
    /// Body bytes of this request so far.
    private var received: Int64 = 0
    /// `return-NNN-after-NK` reached its point: the rest of the body is dropped.
    private var cut = false
    /// The inner sink has not been finished or aborted yet.
    private var innerOpen = true

    /// The application's disposition with the fault attached where it applies: not to session starts and status
    /// queries (they carry no object bytes), nor to answers given before the body (nothing was uploaded).
    static func wrap(
        _ disposition: RequestDisposition, _ instruction: FaultInstruction, _ target: FaultTarget,
        _ position: UploadPosition
    ) -> RequestDisposition {
        guard !position.isSessionStart, !position.isStatusQuery, case .readBody(let sink) = disposition else {
            return disposition
        }
        return .readBody(UploadFaultSink(sink, instruction, target, position))
    }

    private init(
        _ inner: any RequestBodySink, _ instruction: FaultInstruction, _ target: FaultTarget, _ position: UploadPosition
    ) {
        self.inner = inner
        self.instruction = instruction
        self.target = target
        self.position = position
    }

    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        guard case .returnStatusAfter(_, let point) = instruction.action else {
            received += Int64(chunk.count)
            return inner.receive(chunk)
        }
        guard !cut else { return nil }
        let keep = Int(max(0, min(Int64(chunk.count), point - position.start - received)))
        received += Int64(chunk.count)
        if keep > 0, let early = inner.receive(UnsafeRawBufferPointer(rebasing: chunk[0..<keep])) {
            // The inner sink gave up: the transport aborts this sink next, and with it the inner one.
            return early
        }
        if position.start + received >= point { reachPoint() }
        return nil
    }

    /// The inner sink's buffer until the fault point: past it the inner sink may be aborted, and bytes are dropped.
    func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { !cut && innerOpen ? inner.nextChunkBuffer() : nil }

    /// A resumable chunk that does not finalize keeps what came before the point (finished below); anything else
    /// is dropped whole.
    private func reachPoint() {
        cut = true
        if !(position.isChunk && !position.isFinal) {
            inner.abort()
            innerOpen = false
        }
    }

    func finish() -> HTTPResponse {
        switch instruction.action {
        case .returnStatusAfter(let status, let point):
            if !cut && position.start + received >= point { reachPoint() }
            guard cut else {
                innerOpen = false
                return inner.finish()
            }
            target.consume(instruction)
            if innerOpen {
                innerOpen = false
                _ = inner.finish()
            }
            let kind = position.isChunk ? "a resumable" : "a single-shot"
            return Reply.json(
                status, GCSJSON.error(status: status, message: "Retry Test: fault injected during \(kind) upload"))
        case .stall(let seconds, let point):
            innerOpen = false
            var response = inner.finish()
            // The testbench's test: a single-shot body of at least N, or a chunk that starts at or before the point
            // and ends past it.
            let crossed =
                position.isChunk
                ? position.start <= point && position.start + received > point : received >= point
            if crossed {
                target.consume(instruction)
                response.transportFault = .stallResponse(seconds: Double(seconds))
            }
            return response
        default:
            innerOpen = false
            return inner.finish()
        }
    }

    func abort() {
        guard innerOpen else { return }
        innerOpen = false
        inner.abort()
    }
}
