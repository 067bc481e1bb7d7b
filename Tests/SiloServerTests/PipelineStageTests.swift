import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloTestStores
import SiloTesting
import Testing

@testable import SiloServerKit

/// Each of the pipeline's stages on its own (``Authentication``, ``ServedBuckets``, ``CrossOrigin``,
/// ``Observation``), given what it needs as values; `PipelineTests` and the API suites check them composed.
@Suite struct PipelineStageTests {
    /// A server in process, for its router and its services; no request goes through it.
    let server: TestServer

    init() throws {
        var configuration = ServerConfiguration()
        configuration.buckets = [try BucketName(bucket)]
        server = try TestServer(.inProcess, configuration: configuration)
    }

    func route(_ method: String, _ target: String, _ headers: HTTPHeaders = [:]) throws -> (Route, HTTPRequestHead) {
        var headers = headers
        headers.set("Host", "localhost")
        let head = HTTPRequestHead(method: method, target: target, headers: headers)
        return (try server.app.route(of: head), head)
    }

    @Test func authenticationNamesTheCallerAndRecordsThatItReadACredential() throws {
        let attempt = InlineAttempt()
        let stage = Authentication(
            credentials: TokenVerifier.emulator, edge: EdgePolicy(ServerConfiguration()), attempt: attempt)
        let (route, anonymous) = try route("GET", "/v0/b/\(bucket)/o/a.txt")
        var exchange = Exchange(id: nil)
        #expect(try stage.admit(route, anonymous, &exchange).principal == nil)
        #expect(attempt.reads.isEmpty)

        let (_, owner) = try self.route("GET", "/v0/b/\(bucket)/o/a.txt", ["Authorization": "Bearer owner"])
        let context = try stage.admit(route, owner, &exchange)
        #expect(context.principal?.isAdmin == true)
        guard case .admin = exchange.caller else {
            Issue.record("the exchange names the admin, not \(exchange.caller)")
            return
        }
        #expect(attempt.reads.contains(.credential))

        // A signed URL that does not verify is refused on a route that takes signed URLs (the XML API's), and not
        // read on one that does not.
        let signed =
            "?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40p.iam.gserviceaccount.com%2F20261207%2Fauto"
            + "%2Fstorage%2Fgoog4_request&X-Goog-Date=20261207T000000Z&X-Goog-Expires=600&X-Goog-SignedHeaders=host"
            + "&X-Goog-Signature=00"
        let (xml, forged) = try self.route("GET", "/\(bucket)/a.txt" + signed)
        #expect(xml.target.acceptsSignedURLs)
        #expect(throws: StorageError.self) { try stage.admit(xml, forged, &exchange) }
        let (v0, unread) = try self.route("GET", "/v0/b/\(bucket)/o/a.txt" + signed)
        #expect(try stage.admit(v0, unread, &exchange).principal == nil)
    }

    @Test func servedBucketsRefusesWhatIsNotServedOrNotImplementedAndPassesTheRest() throws {
        let stage = server.app.pipeline.servedBuckets
        let (served, _) = try route("GET", "/v0/b/\(bucket)/o/a.txt")
        #expect(stage.refusal(served, method: "GET") == nil)
        let (elsewhere, _) = try route("GET", "/storage/v1/b/elsewhere/o/a.txt")
        guard case .notServed(let error)? = stage.refusal(elsewhere, method: "GET") else {
            Issue.record("a bucket not served goes on")
            return
        }
        #expect(error.code == .notFound)
        // A copy names two buckets: either one not served refuses it.
        let (copy, _) = try route("POST", "/storage/v1/b/\(bucket)/o/a.txt/copyTo/b/elsewhere/o/b.txt")
        #expect(stage.refusal(copy, method: "POST") != nil)
        // Not implemented comes first, whatever the bucket.
        let (objectIAM, _) = try route("POST", "/storage/v1/b/elsewhere/o/a/iam")
        guard case .unimplemented(let missing)? = stage.refusal(objectIAM, method: "POST") else {
            Issue.record("an unimplemented feature goes on")
            return
        }
        #expect(missing.code == .unimplemented)
    }

    @Test func crossOriginDecoratesEveryAnswerButTheConsoles() {
        let head = HTTPRequestHead(method: "GET", target: "/x", headers: ["Origin": "https://app.example"])
        var answer = HTTPResponse(status: 200)
        CrossOrigin.decorate(&answer, head, ownPolicy: false)
        #expect(answer.headers["Access-Control-Allow-Origin"] != nil)
        #expect(answer.headers["X-Content-Type-Options"] == "nosniff")

        var own = HTTPResponse(status: 200)
        CrossOrigin.decorate(&own, head, ownPolicy: true)
        #expect(own.headers["Access-Control-Allow-Origin"] == nil)

        let preflight = HTTPRequestHead(
            method: "OPTIONS", target: "/x",
            headers: ["Origin": "https://app.example", "Access-Control-Request-Method": "PUT"])
        #expect(CrossOrigin.preflight(preflight, ownPolicy: false).headers["Access-Control-Allow-Methods"] != nil)
        #expect(CrossOrigin.preflight(preflight, ownPolicy: true).headers["Access-Control-Allow-Methods"] == nil)
    }

    @Test func observationCountsLabelsAndNamesEveryAnswer() throws {
        let observability = Observability()
        let log = CapturingLogHandler()
        let attempt = InlineAttempt()
        let stage = Observation(observability: observability, logger: log.logger(), attempt: attempt)
        let (route, head) = try self.route("GET", "/v0/b/\(bucket)/o/a.txt", ["X-Request-Id": "client-chosen-1"])
        var exchange = Exchange(id: nil)
        exchange.routed(route, head)

        // The client's id is echoed, and an inline attempt learns that the answer read it.
        var answer = HTTPResponse(status: 200)
        stage.observe(&answer, head, exchange)
        #expect(answer.requestID == "client-chosen-1")
        #expect(attempt.reads.contains(.clientRequestID))
        #expect(observability.requests.requests(route.target.label, status: 200) == 1)

        // A server failure is logged once with its cause and counted by kind, under the id its message names.
        var failing = Reply.firebaseError(StorageError(.internalError, "disk on fire", cause: nil))
        let failureID = try #require(failing.headers["X-Request-Id"])
        stage.observe(&failing, head, exchange)
        #expect(failing.headers["X-Request-Id"] == failureID && failing.requestID == nil)
        #expect(log.logged.filter { $0.message == "request failed" }.count == 1)
        #expect(log.logged.first?.metadata["silo.request_id"].map { "\($0)" } == failureID)
        #expect(observability.failures.snapshot.contains { $0.count == 1 })
        #expect(observability.requests.requests(route.target.label, status: 500) == 1)

        stage.observeAbort(head, exchange)
        #expect(observability.requests.requests(route.target.label, status: 499) == 1)
    }
}
