import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// Which host a credential may name, and who may say how a request was addressed (docs/threat-model.md, "Hosts,
/// proxies and the request's edge"). GCS checks a V4 signature against the host the URL was signed for, and a
/// token assertion's `aud` against its token endpoint; a client that holds a URL or assertion made for another
/// deployment sharing the key must not get it accepted here by naming that deployment in `Host` or
/// `X-Forwarded-Host`. Forwarded headers count only from the proxies the operator names.
@Suite struct HostTrustTests {
    static let other = "staging.example:9199"
    var reader: TestServiceAccount { SecuredServer.reader }

    /// A secured server with `photo.jpg`, readable by the reader account.
    func secured(configure: (inout ServerConfiguration) -> Void = { _ in }) throws -> SecuredServer {
        let s = try SecuredServer(configure: configure)
        try s.put("photo.jpg", "jpeg bytes")
        try s.bind([("roles/storage.objectViewer", ["serviceAccount:\(reader.email)"])])
        return s
    }

    func signed(_ s: SecuredServer, host: String) throws -> String {
        try reader.signedURL(method: "GET", path: "/\(s.bucketName)/photo.jpg", host: host, date: .now())
    }

    static func code(_ response: TestResponse) -> String? { XMLText.value("Code", in: Substring(response.text)) }

    @Test("a URL signed for another host is refused, whatever Host or X-Forwarded-Host the request names")
    func signedForAnotherHost() throws {
        let s = try secured()
        let url = try signed(s, host: Self.other)
        for headers: HTTPHeaders in [[:], ["X-Forwarded-Host": Self.other], ["Host": Self.other]] {
            let response = try s.send("GET", url, headers: headers)
            #expect(response.status == 403, "\(headers): \(response.text)")
            #expect(Self.code(response) == "SignatureDoesNotMatch", "\(headers)")
        }
    }

    @Test("a URL signed for the address the client reached works with no configuration: its IP, or localhost")
    func signedForTheServersOwnAddress() throws {
        let s = try secured()
        let port = s.server.port
        #expect(try s.send("GET", try signed(s, host: "127.0.0.1:\(port)")).text == "jpeg bytes")
        let local = try s.send("GET", try signed(s, host: "localhost:\(port)"), headers: ["Host": "localhost:\(port)"])
        #expect(local.text == "jpeg bytes", "\(local.text)")
        // Another port on the same address is another server.
        let elsewhere = "127.0.0.1:\(port == 65535 ? port - 1 : port + 1)"
        let wrongPort = try s.send("GET", try signed(s, host: elsewhere), headers: ["Host": elsewhere])
        #expect(wrongPort.status == 403 && Self.code(wrongPort) == "SignatureDoesNotMatch")
        // Virtual-hosted: the bucket's label in front of the server's own name.
        let virtual = "\(s.bucketName).localhost:\(port)"
        let target = try reader.signedURL(method: "GET", path: "/photo.jpg", host: virtual, date: .now())
        #expect(try s.send("GET", target, headers: ["Host": virtual]).text == "jpeg bytes")
    }

    @Test("--public-url: URLs signed for the public host are accepted, whatever Host a proxy passes on")
    func signedForThePublicURL() throws {
        let s = try secured { $0.publicURLs = [PublicURL("https://storage.example.com")!] }
        let url = try signed(s, host: "storage.example.com")
        #expect(try s.send("GET", url).text == "jpeg bytes")
        #expect(try s.send("GET", url, headers: ["Host": "storage.example.com"]).text == "jpeg bytes")
        #expect(try s.send("GET", try signed(s, host: Self.other), headers: ["Host": Self.other]).status == 403)
    }

    /// A token request as google-auth sends it, with the assertion's `aud` set to `audience`.
    func tokenRequest(_ s: SecuredServer, audience: String, headers: HTTPHeaders = [:]) throws -> TestResponse {
        let assertion = try reader.jwt(reader.assertionClaims(now: .now(), audience: audience))
        var fields = headers
        fields.set("Content-Type", "application/x-www-form-urlencoded")
        return try s.send(
            "POST", "/token",
            "grant_type=\(PercentCoding.encodeComponent(TokenGrant.grantType))&assertion=\(assertion)",
            headers: fields)
    }

    @Test("POST /token refuses an assertion for another host's token endpoint, whatever the request's Host says")
    func tokenAudience() throws {
        let s = try secured()
        for headers: HTTPHeaders in [[:], ["Host": Self.other], ["X-Forwarded-Host": Self.other]] {
            let response = try tokenRequest(s, audience: "http://\(Self.other)/token", headers: headers)
            #expect(response.status == 400, "\(headers): \(response.text)")
            #expect(try response.string("error") == "invalid_grant", "\(headers)")
        }
        // The key's token_uri naming this server as the client reached it, or Google's endpoint.
        let port = s.server.port
        #expect(try tokenRequest(s, audience: "http://127.0.0.1:\(port)/token").status == 200)
        let local = try tokenRequest(
            s, audience: "http://localhost:\(port)/token", headers: ["Host": "localhost:\(port)"])
        #expect(local.status == 200, "\(local.text)")
        #expect(try tokenRequest(s, audience: "https://oauth2.googleapis.com/token").status == 200)
    }

    @Test("POST /token accepts an assertion for a --public-url's token endpoint")
    func tokenAudienceOfThePublicURL() throws {
        let s = try secured { $0.publicURLs = [PublicURL("https://storage.example.com")!] }
        #expect(try tokenRequest(s, audience: "https://storage.example.com/token").status == 200)
        #expect(try tokenRequest(s, audience: "http://\(Self.other)/token").status == 400)
    }

    /// An emulator-mode server with one bucket; `trusted` are its `--trusted-proxies`.
    func plain(trusted: [String] = []) throws -> (TestServer, HTTPTestClient) {
        var configuration = ServerConfiguration()
        configuration.trustedProxies = trusted.compactMap(PeerNetwork.init)
        let server = try TestServer(configuration: configuration)
        let client = server.client()
        #expect(
            try client.send(method: "POST", target: "/storage/v1/b", body: bytes(#"{"name":"edge"}"#)).status == 200)
        return (server, client)
    }

    /// The upload URL a GCS resumable start hands out, with `headers`.
    func uploadURL(_ client: HTTPTestClient, headers: HTTPHeaders) throws -> String {
        let response = try client.send(
            method: "POST", target: "/upload/storage/v1/b/edge/o?uploadType=resumable&name=a.bin", headers: headers)
        #expect(response.status == 200, "\(response.text)")
        return response.headers["Location"] ?? ""
    }

    @Test("X-Forwarded-Host and -Proto are ignored unless the peer is a trusted proxy")
    func forwardedHeadersNeedATrustedPeer() throws {
        let forwarded: HTTPHeaders = ["X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"]
        let (server, client) = try plain()
        let own = "http://127.0.0.1:\(server.port)/upload/storage/v1/b/edge/o?"
        #expect(try uploadURL(client, headers: forwarded).hasPrefix(own))
        let (otherServer, otherClient) = try plain(trusted: ["10.0.0.0/8", "2001:db8::/32"])
        #expect(
            try uploadURL(otherClient, headers: forwarded).hasPrefix(
                "http://127.0.0.1:\(otherServer.port)/upload/storage/v1/b/edge/o?"))
        let (proxy, proxied) = try plain(trusted: ["127.0.0.1/32"])
        defer { withExtendedLifetime(proxy) {} }
        #expect(
            try uploadURL(proxied, headers: forwarded).hasPrefix("https://evil.example/upload/storage/v1/b/edge/o?"))
        // A chain of proxies lists the hosts; the first is the one the client used.
        let chain: HTTPHeaders = [
            "X-Forwarded-Host": "public.example, inner.example", "X-Forwarded-Proto": "https, http",
        ]
        #expect(try uploadURL(proxied, headers: chain).hasPrefix("https://public.example/upload/"))
    }

    @Test("a batch's calls take the forwarded headers of the batch, never their own")
    func batchCallsInheritTheBatchsEdge() throws {
        let (proxy, client) = try plain(trusted: ["127.0.0.1/32"])
        defer { withExtendedLifetime(proxy) {} }
        #expect(
            try client.send(
                method: "POST", target: "/upload/storage/v1/b/edge/o?uploadType=media&name=a.txt", body: bytes("a")
            ).status == 200)
        let call = GCSBatchTests.Call(
            "1", "GET /storage/v1/b/edge/o/a.txt HTTP/1.1\nX-Forwarded-Host: inner.example\nX-Forwarded-Proto: http\n")
        let response = try GCSBatchTests.send(
            client, [call], headers: ["X-Forwarded-Host": "proxy.example", "X-Forwarded-Proto": "https"])
        let answer = try #require(try GCSBatchTests.answers(response).first)
        let link = try answer.json()["selfLink"]?.stringValue ?? ""
        #expect(link.hasPrefix("https://proxy.example/storage/v1/b/edge/o/a.txt"), "\(link)")
        // Without a trusted proxy in front, neither the batch's nor the call's own count.
        let (server, untrusted) = try plain()
        #expect(
            try untrusted.send(
                method: "POST", target: "/upload/storage/v1/b/edge/o?uploadType=media&name=a.txt", body: bytes("a")
            ).status == 200)
        let direct = try GCSBatchTests.send(
            untrusted, [call], headers: ["X-Forwarded-Host": "proxy.example", "X-Forwarded-Proto": "https"])
        let own = try #require(try GCSBatchTests.answers(direct).first).json()["selfLink"]?.stringValue ?? ""
        #expect(own.hasPrefix("http://127.0.0.1:\(server.port)/storage/v1/b/edge/o/a.txt"), "\(own)")
    }
}
