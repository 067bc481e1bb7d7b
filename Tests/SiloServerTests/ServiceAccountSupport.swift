import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// A secured server (not emulator mode) with an admin key and registered service accounts, and the calls the
/// service account suites make against it.
struct SecuredServer {
    static let adminKey = "silo-admin-key-for-service-account-tests"
    /// Shared: key generation takes tens of milliseconds.
    static let reader = try! TestServiceAccount(email: "reader@silo-test.iam.gserviceaccount.com")
    static let writer = try! TestServiceAccount(email: "writer@silo-test.iam.gserviceaccount.com")
    static let stranger = try! TestServiceAccount(email: "stranger@silo-test.iam.gserviceaccount.com")

    let server: TestServer
    let client: HTTPTestClient
    let bucketName = "sa-bucket"
    var admin: HTTPHeaders { ["Authorization": "Bearer \(Self.adminKey)", "Content-Type": "application/json"] }

    /// `emulator`: emulator mode (every caller the admin) with the accounts registered or not; `configure` sets
    /// anything else.
    init(
        emulator: Bool = false, registered: Bool = true, signedURLHosts: [String] = ["storage.googleapis.com"],
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) throws {
        var configuration = ServerConfiguration()
        configuration.openAdminAPI = emulator
        let accounts =
            registered ? try ServiceAccounts([Self.reader.account(), Self.writer.account()]) : try ServiceAccounts([])
        configuration.serviceAccounts = ServiceAccountAuthority(
            accounts: accounts, signedURLHosts: signedURLHosts, acceptUnverifiedSigners: emulator)
        var verifier = TokenVerifier.Configuration()
        verifier.adminKeys = try AdminKeys(keys: [Self.adminKey])
        verifier.emulator = emulator
        configure(&configuration)
        server = try TestServer(configuration: configuration, credentials: TokenVerifier(verifier))
        client = server.client()
        #expect(try send("POST", "/storage/v1/b", #"{"name":"\#(bucketName)"}"#, headers: admin).status == 200)
    }

    var objects: String { "/storage/v1/b/\(bucketName)/o" }

    func send(_ method: String, _ target: String, _ body: String = "", headers: HTTPHeaders = [:]) throws
        -> TestResponse
    {
        try client.send(method: method, target: target, headers: headers, body: Array(body.utf8))
    }

    /// An object stored by the admin.
    @discardableResult
    func put(_ name: String, _ body: String) throws -> TestResponse {
        let response = try send(
            "POST", "/upload/storage/v1/b/\(bucketName)/o?uploadType=media&name=\(PercentCoding.encodeComponent(name))",
            body, headers: ["Authorization": "Bearer \(Self.adminKey)"])
        #expect(response.status == 200, "\(response.text)")
        return response
    }

    /// The bucket's IAM policy set to `bindings` (role, members) by the admin.
    func bind(_ bindings: [(String, [String])]) throws {
        let json = JSONValue.object([
            "bindings": .array(
                bindings.map { .object(["role": .string($0.0), "members": .array($0.1.map { .string($0) })]) })
        ])
        let response = try send("PUT", "/storage/v1/b/\(bucketName)/iam", json.serializedString, headers: admin)
        #expect(response.status == 200, "\(response.text)")
    }

    /// An access token from the token endpoint, as google-auth asks for it.
    func token(
        _ account: TestServiceAccount, scope: String = "https://www.googleapis.com/auth/devstorage.full_control",
        path: String = "/token"
    ) throws -> String {
        let assertion = try account.jwt(account.assertionClaims(now: .now(), scope: scope))
        let response = try send(
            "POST", path,
            "grant_type=\(PercentCoding.encodeComponent(TokenGrant.grantType))&assertion=\(assertion)",
            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(response.status == 200, "\(response.text)")
        return try #require(try response.string("access_token"))
    }

    func bearer(_ token: String) -> HTTPHeaders { ["Authorization": "Bearer \(token)"] }
}
