import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// HMAC keys on the JSON API (`/projects/{p}/hmacKeys`): their life cycle, limits and durability, on a live server.
@Suite struct HMACKeyTests {
    static let email = "signer@silo-test.iam.gserviceaccount.com"
    static let keys = "/storage/v1/projects/silo-test/hmacKeys"

    func send(_ client: HTTPTestClient, _ method: String, _ target: String, _ body: String = "") throws -> TestResponse
    {
        try client.send(
            method: method, target: target, headers: ["Content-Type": "application/json"], body: Array(body.utf8))
    }

    func create(_ client: HTTPTestClient, _ email: String = email) throws -> (id: String, secret: String) {
        let r = try send(client, "POST", Self.keys + "?serviceAccountEmail=\(PercentCoding.encodeComponent(email))")
        #expect(r.status == 200, "\(r.text)")
        let json = try r.json()
        let metadata = try #require(json["metadata"]?.objectValue)
        #expect(json["kind"] == .string("storage#hmacKey"))
        #expect(metadata["state"] == .string("ACTIVE") && metadata["serviceAccountEmail"] == .string(email))
        return (try #require(metadata["accessId"]?.stringValue), try #require(json["secret"]?.stringValue))
    }

    @Test("create, get, list, deactivate, delete: the secret only at creation, only INACTIVE keys deleted")
    func lifeCycle() throws {
        let server = try TestServer()
        let client = server.client()
        let (id, secret) = try create(client)
        #expect(id.hasPrefix("GOOG1E") && secret.utf8.count == 40)
        let got = try send(client, "GET", "\(Self.keys)/\(id)")
        #expect(got.status == 200 && got.text.contains(id) && !got.text.contains(secret))
        let etag = try #require(try got.json()["etag"]?.stringValue)

        let active = try send(client, "DELETE", "\(Self.keys)/\(id)")
        #expect(active.status == 400, "an ACTIVE key cannot be deleted: \(active.text)")
        let stale = try send(client, "PUT", "\(Self.keys)/\(id)", #"{"state":"INACTIVE","etag":"nope"}"#)
        #expect(stale.status == 412, "\(stale.text)")
        #expect(try send(client, "PUT", "\(Self.keys)/\(id)", #"{"state":"DELETED"}"#).status == 400)
        let updated = try send(client, "PUT", "\(Self.keys)/\(id)", #"{"state":"INACTIVE","etag":"\#(etag)"}"#)
        #expect(updated.status == 200, "\(updated.text)")
        #expect(try updated.json()["state"] == .string("INACTIVE") && !updated.text.contains(secret))
        #expect(try updated.json()["etag"] != .string(etag))

        #expect(try send(client, "DELETE", "\(Self.keys)/\(id)").status == 204)
        #expect(try send(client, "DELETE", "\(Self.keys)/\(id)").status == 404)
        #expect(try send(client, "PUT", "\(Self.keys)/\(id)", #"{"state":"INACTIVE"}"#).status == 404)
        #expect(try send(client, "GET", "\(Self.keys)/\(id)").json()["state"] == .string("DELETED"))
        #expect(try send(client, "GET", Self.keys).json()["items"] == nil)
        let deleted = try send(client, "GET", Self.keys + "?showDeletedKeys=True").json()["items"]?.arrayValue
        #expect(deleted?.count == 1)
        #expect(try send(client, "GET", "\(Self.keys)/GOOG1ENOSUCHKEY").status == 404)
        #expect(try send(client, "POST", Self.keys).status == 400, "serviceAccountEmail is required")
    }

    @Test("ten keys per service account; lists filter by account and page")
    func limitsAndPaging() throws {
        let server = try TestServer()
        let client = server.client()
        var ids: [String] = []
        for _ in 0..<10 { ids.append(try create(client).id) }
        let eleventh = try send(client, "POST", Self.keys + "?serviceAccountEmail=\(Self.email)")
        #expect(eleventh.status == 400, "\(eleventh.text)")
        let other = try create(client, "other@silo-test.iam.gserviceaccount.com")
        let mine = try send(client, "GET", Self.keys + "?serviceAccountEmail=\(Self.email)").json()
        #expect(mine["items"]?.arrayValue?.count == 10)
        var seen: [String] = []
        var token: String?
        repeat {
            let page = try send(client, "GET", Self.keys + "?maxResults=4" + (token.map { "&pageToken=\($0)" } ?? ""))
                .json()
            for item in page["items"]?.arrayValue ?? [] {
                seen.append(item.objectValue?["accessId"]?.stringValue ?? "")
            }
            token = page["nextPageToken"]?.stringValue
        } while token != nil
        #expect(seen.sorted() == (ids + [other.id]).sorted())
    }

    @Test("keys survive a restart")
    func durable() throws {
        let directory = try TemporaryDirectory()
        var first: TestServer? = try TestServer(directory: directory)
        let (id, _) = try create(first!.client())
        first!.shutdown()
        first = nil
        let second = try TestServer(directory: directory)
        let got = try send(second.client(), "GET", "\(Self.keys)/\(id)")
        #expect(got.status == 200 && got.text.contains(id), "\(got.text)")
    }

    @Test("only the admin manages HMAC keys on a secured server")
    func adminOnly() throws {
        let secured = try SecuredServer()
        let token = try secured.token(SecuredServer.writer)
        let refused = try secured.send(
            "POST", Self.keys + "?serviceAccountEmail=\(Self.email)", headers: secured.bearer(token))
        #expect(refused.status == 403, "\(refused.text)")
        #expect(try secured.send("GET", Self.keys).status == 401)
        let created = try secured.send(
            "POST", Self.keys + "?serviceAccountEmail=\(Self.email)", headers: secured.admin)
        #expect(created.status == 200, "\(created.text)")
    }
}
