import SiloCore
public import SiloHTTP
public import SiloServerKit
import SiloWire

/// `silo serve --test-faults`: storage-testbench's Retry Test API in front of the application. Requests for
/// `/retry_test…` go to the API; a request with `x-retry-test-id` whose operation (``RouteTarget/operationID(_:)``) has an
/// instruction pending gets that fault; everything else goes to the application untouched. Without
/// `--test-faults` this handler is not installed, so ordinary serving pays nothing for it. docs/test-faults.md.
public final class FaultInjectingHandler: HTTPHandler {
    private let app: SiloServerApp
    private let registry = RetryTestRegistry()
    private let api: RetryTestAPI

    /// `maxJSONBodyBytes` bounds the body of `POST /retry_test`.
    public init(wrapping app: SiloServerApp, maxJSONBodyBytes: Int) {
        self.app = app
        api = RetryTestAPI(registry: registry, maxBodyBytes: maxJSONBodyBytes, operations: app.operationIDs)
    }

    /// Only requests this handler leaves alone may be answered inline: the Retry Test API and every request that
    /// names a test touch the registry, so they go to a worker. What the app defers is what ``begin(_:)`` would do
    /// for the others: pass them to the app.
    public func makeInlineAnswerer() -> (any InlineAnswerer)? {
        app.makeInlineAnswerer().map(UntestedRequests.init)
    }

    public func begin(_ head: HTTPRequestHead) -> RequestDisposition {
        if let answer = api.handle(head) { return answer }
        guard let id = head.headers["x-retry-test-id"] else { return app.begin(head) }
        // A malformed path is the application's to refuse; it names no operation.
        guard let route = try? app.route(of: head), let operation = route.target.operationID(head) else {
            return app.begin(head)
        }
        switch RetryTestAPI.isTestID(id) ? registry.next(id, operation) : .noSuchTest {
        case .noSuchTest:
            // As the testbench: a test id that names no test is an error, not an ordinary request.
            return .respond(Reply.gcsError(StorageError(.notFound, "Retry Test \(id.prefix(64)) not found")))
        case .nothingPending:
            return app.begin(head)
        case .next(let instruction):
            return apply(instruction, FaultTarget(registry: registry, id: id, operation: operation), head)
        }
    }

    private func apply(_ instruction: FaultInstruction, _ target: FaultTarget, _ head: HTTPRequestHead)
        -> RequestDisposition
    {
        switch instruction.action {
        case .returnStatus(let status):
            target.consume(instruction)
            return .respond(
                Reply.json(status, GCSJSON.error(status: status, message: "Retry Test: Caused a \(status)")))
        case .resetConnection:
            target.consume(instruction)
            var response = HTTPResponse(status: 503)
            response.transportFault = .resetConnection
            return .respond(response)
        case .breakBody(let after):
            target.consume(instruction)
            return Self.transform(app.begin(head)) { $0.transportFault = .breakBody(afterBytes: after) }
        case .stall(let seconds, let after) where target.operation != OperationName.objectsInsert:
            target.consume(instruction)
            return Self.transform(app.begin(head)) {
                $0.transportFault = .stallBody(afterBytes: after, seconds: Double(seconds))
            }
        case .stall, .returnStatusAfter:
            return UploadFaultSink.wrap(app.begin(head), instruction, target, UploadPosition(head))
        case .breakFinalChunk(let after):
            // Only the request that finalizes a resumable upload (200 on the session URL; 308 means more to come).
            guard UploadPosition(head).isChunk else { return app.begin(head) }
            return Self.transform(app.begin(head)) { response in
                guard response.status == 200 else { return }
                target.consume(instruction)
                response.transportFault = .breakBody(afterBytes: after)
            }
        }
    }

    /// The application's answer, changed by `change` (also when it comes from a body sink).
    static func transform(_ disposition: RequestDisposition, _ change: @escaping (inout HTTPResponse) -> Void)
        -> RequestDisposition
    {
        switch disposition {
        case .respond(var response):
            change(&response)
            return .respond(response)
        case .readBody(let sink):
            return .readBody(DecoratingSink(sink, decorate: change))
        }
    }
}

/// The test and operation a request's fault comes from.
struct FaultTarget {
    let registry: RetryTestRegistry
    let id: String
    let operation: String

    func consume(_ instruction: FaultInstruction) { registry.consume(id, operation, instruction) }
}

/// The app's inline answers for the requests that name no retry test; the rest go to a worker.
private final class UntestedRequests: InlineAnswerer {
    let app: any InlineAnswerer
    init(_ app: any InlineAnswerer) { self.app = app }

    func beginInline(_ head: HTTPRequestHead) -> InlineDisposition {
        guard head.headers["x-retry-test-id"] == nil, !RetryTestAPI.handles(head) else { return .declined }
        return app.beginInline(head)
    }
}
