import SiloAuth
import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// `POST /token` and `POST /oauth2/v4/token`: the OAuth 2.0 token endpoint a service account key's `token_uri`
/// can point at. It takes the JWT-bearer grant google-auth sends (form-encoded `grant_type` and `assertion`, checked
/// by ``SiloAuth/TokenGrant``) and answers as RFC 6749 §5 says: `{"access_token", "expires_in", "token_type"}`, or
/// 400 with `{"error", "error_description"}`, never cached.
package struct TokenEndpoint {
    let service: ObjectService

    /// A grant is two short fields; an assertion is about 1 KiB.
    static let maxBodyBytes = 16 << 10

    func handle(_ context: RequestContext) -> RequestDisposition {
        guard context.method == "POST" else {
            return .respond(Self.error(400, "invalid_request", "the token endpoint takes POST"))
        }
        let type = context.headers["Content-Type"]?.split(separator: ";").first?.trimmingCharacters(in: " ")
        guard type?.lowercased() == "application/x-www-form-urlencoded" else {
            return .respond(
                Self.error(400, "invalid_request", "the body must be application/x-www-form-urlencoded"))
        }
        return .readBody(
            CollectingSink(
                limit: Self.maxBodyBytes,
                refuse: { Self.error(413, "invalid_request", $0.message) }
            ) { body in exchange(body, context) })
    }

    private func exchange(_ body: [UInt8], _ context: RequestContext) -> HTTPResponse {
        // The form is a query string in the body; the query's own parser reads it.
        guard let text = String(validating: body, as: UTF8.self),
            let fields = HTTPRequestHead(method: "POST", rawPath: "/", rawQuery: text).queryItems
        else { return Self.error(400, "invalid_request", "the form is not valid UTF-8 percent-encoding") }
        func field(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }
        guard field("grant_type") == [TokenGrant.grantType] else {
            return Self.error(
                400, "unsupported_grant_type", "only the JWT-bearer grant (\(TokenGrant.grantType)) is supported")
        }
        let assertions = field("assertion")
        guard assertions.count == 1 else {
            return Self.error(400, "invalid_request", "the form needs exactly one assertion")
        }
        do {
            let issued = try service.serviceAccounts.grant.exchange(
                assertion: assertions[0], audiences: audiences(context), at: context.time)
            return Reply.json(
                200,
                .object([
                    "access_token": .string(issued.accessToken), "expires_in": .number(issued.expiresIn),
                    "token_type": .string("Bearer"),
                ]), headers: Self.uncached)
        } catch {
            let code =
                switch error.code {
                case .invalidScope: "invalid_scope"
                case .invalidSubject: "unauthorized_client"
                default: "invalid_grant"
                }
            return Self.error(400, code, error.message)
        }
    }

    /// Google's token endpoints, and this endpoint at a host the server takes for its own (`aud` is the key's
    /// `token_uri` for clients that write it there): the address the client reached or a public URL
    /// (``EdgePolicy/credentialHosts(_:)``), never whatever `Host` or `X-Forwarded-Host` the request carries.
    private func audiences(_ context: RequestContext) -> Set<String> {
        var audiences = TokenGrant.googleAudiences
        for host in service.edge.credentialHosts(context.head) {
            for scheme in ["http", "https"] { audiences.insert("\(scheme)://\(host)\(context.head.rawPath)") }
        }
        return audiences
    }

    private static let uncached: HTTPHeaders = ["Cache-Control": "no-store", "Pragma": "no-cache"]

    private static func error(_ status: Int, _ code: String, _ description: String) -> HTTPResponse {
        Reply.json(
            status, .object(["error": .string(code), "error_description": .string(description)]), headers: uncached)
    }
}
