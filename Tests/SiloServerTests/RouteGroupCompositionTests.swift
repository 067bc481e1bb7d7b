import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import Testing

/// A route group from outside the kit, as a new API's target would bring one: it claims its own paths, names its
/// own metric labels and error shape, and the pipeline runs it like the shipped APIs (authentication, CORS,
/// observation), on a real socket. Nothing in the kit or in another API names it.
@Suite struct RouteGroupCompositionTests {
    /// `/notes/{name}`: a note's name, read back.
    struct NotesGroup: RouteGroup {
        init(_ parts: RouteGroupParts) {}

        static func route(path rawPath: String) throws -> (any RouteTarget)? {
            guard rawPath.hasPrefix("/notes/") else { return nil }
            let name = try RoutePath.decode(rawPath.dropFirst("/notes/".count))
            guard !name.isEmpty else { throw StorageError(.invalidArgument, "a note has a name") }
            return NoteRoute(name: name)
        }

        static func refusedLabel(_ rawPath: String) -> RouteLabel { NoteRoute.refused }

        func handle(_ target: any RouteTarget, _ context: RequestContext, _ pipeline: RequestPipeline) throws
            -> RequestDisposition?
        {
            guard let note = target as? NoteRoute else { return nil }
            guard note.name != "missing" else { throw StorageError(.notFound, "no note named missing") }
            return .respond(Reply.text(200, "note \(note.name)"))
        }

        func errorShape(for target: (any RouteTarget)?, rawPath: String) -> (any ErrorShape)? {
            target is NoteRoute || rawPath.hasPrefix("/notes/") ? NoteErrors() : nil
        }
    }

    final class NoteRoute: RouteTarget {
        let name: String
        init(name: String) { self.name = name }
        var label: RouteLabel { Self.label }
        static let label = RouteLabel("note", api: "notes")
        static let refused = RouteLabel("invalid", api: "notes")
    }

    /// Errors as plain text, so that a test can tell this shape from every shipped API's.
    struct NoteErrors: ErrorShape {
        func answer(_ error: any Error) -> HTTPResponse {
            let error = StorageError.wrap(error)
            return Reply.text(HTTPStatus.of(error.code), "notes: \(error.message)")
        }
    }

    func server(apis: [any RouteGroup.Type]) throws -> TestServer {
        let directory = try TemporaryDirectory()
        let (metadata, blobs) = (try TestStores.metadata(directory), try TestStores.blobs(directory))
        let app = SiloServerApp(
            configuration: ServerConfiguration(), metadata: metadata, blobs: blobs, credentials: TokenVerifier.emulator,
            logger: .disabled, apis: apis)
        return try TestServer(app: app, metadata: metadata, blobs: blobs, directory: directory, threads: 2)
    }

    @Test func aGroupOfItsOwnClaimsItsPathsLabelsAndErrorShape() throws {
        let server = try server(apis: SiloServerApp.apis + [NotesGroup.self])
        defer { server.shutdown() }
        let client = server.client()

        let note = try client.send(method: "GET", target: "/notes/first%20one", headers: ["Origin": "https://app"])
        #expect(note.status == 200)
        #expect(note.text == "note first one")
        // The pipeline's own steps ran for it: CORS and the request id.
        #expect(note.headers["Access-Control-Allow-Origin"] != nil)
        #expect(note.headers["X-Request-Id"] != nil)

        // A handler's error and a refused path, each in the group's shape.
        let missing = try client.send(method: "GET", target: "/notes/missing")
        #expect(missing.status == 404)
        #expect(missing.text == "notes: no note named missing")
        let refused = try client.send(method: "GET", target: "/notes/%FF")
        #expect(refused.status == 400)
        #expect(refused.text.hasPrefix("notes: malformed percent-encoding"))

        // The shipped APIs answer as before beside it.
        #expect(try client.mediaUpload("a.txt", Array("hello".utf8)).status == 200)
        #expect(try client.send(method: "GET", target: "/\(bucket)/a.txt").text == "hello")

        let metrics = try client.scrape()
        #expect(metrics.value("silo_http_requests_total", ["api": "notes", "route": "note", "code": "200"]) == 1)
        #expect(metrics.value("silo_http_requests_total", ["api": "notes", "route": "note", "code": "404"]) == 1)
        #expect(metrics.value("silo_http_requests_total", ["api": "notes", "route": "invalid", "code": "400"]) == 1)
    }

    /// Routes are kept per thread by the path's bytes; two servers in one process that route a path differently each
    /// get their own answer, whichever asked first.
    @Test func twoServersInOneProcessRouteByTheirOwnGroups() throws {
        let withNotes = try server(apis: SiloServerApp.apis + [NotesGroup.self])
        let without = try server(apis: SiloServerApp.apis)
        defer {
            withNotes.shutdown()
            without.shutdown()
        }
        let target = "/notes/a.txt"
        for _ in 0..<3 {
            // Without the group, the path is the XML API's: object `a.txt` of bucket `notes`, which does not exist.
            let xml = try without.client().send(method: "GET", target: target)
            #expect(xml.status == 404)
            #expect(xml.text.contains("<Code>NoSuchBucket</Code>"))
            #expect(try withNotes.client().send(method: "GET", target: target).text == "note a.txt")
            // In process, on this one thread, in both orders.
            #expect(
                try without.app.route(of: HTTPRequestHead(method: "GET", target: target)).target is NoteRoute == false)
            #expect(try withNotes.app.route(of: HTTPRequestHead(method: "GET", target: target)).target is NoteRoute)
        }
    }
}
