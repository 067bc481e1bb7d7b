import SiloAuth
import SiloCore
import SiloHTTP

/// Signed URLs on the XML API (GET, HEAD, PUT, DELETE, POST with `x-goog-resumable: start`, and list): the query's
/// signature is checked by the credential verifier against the request as it arrived, for a host the server takes
/// for its own (``EdgePolicy/credentialHosts(_:)``), and its signer becomes the request's principal — IAM then
/// decides, as for any caller. Refusals carry GCS's XML error codes.
enum SignedURLGate {
    struct Signed {
        /// The signer, or nil when the signature could not be checked and need not be (emulator mode, signer not
        /// registered).
        let principal: Principal?
    }

    /// Nil when the request carries no URL signature.
    static func signer(
        _ head: HTTPRequestHead, _ query: QueryParameters, _ credentials: any CredentialVerifier, edge: EdgePolicy,
        at time: Timestamp
    ) throws -> Signed? {
        var request = SignedRequest(
            method: head.method, rawPath: head.rawPath, query: query.items,
            headers: head.headers.map { (name: $0.name, value: $0.value) })
        // A resumable session's URL keeps the query of the signed URL that started it, with `upload_id` added (GCS's
        // `Location`); the session id is what authorizes it, and the signature, made for the starting POST, is not
        // checked again.
        // `Authorization: GOOG4-HMAC-SHA256 …` signs the request in its header (S3-style clients, HMAC keys).
        let headerSigned = ServiceAccountAuthority.hmacAuthorization(request) != nil
        guard request.isSigned || headerSigned, !query.contains("upload_id") else { return nil }
        request.hosts = edge.credentialHosts(head)
        // Two credentials would leave it open which one the request acts with. (An empty `Bearer`, as Rust's
        // object_store sends without credentials, is none.)
        if request.isSigned, let authorization = head.headers["Authorization"],
            authorization.split(separator: " ", omittingEmptySubsequences: true).count > 1
        {
            throw StorageError(
                .invalidArgument, "a signed URL cannot also carry an Authorization header; send one credential")
        }
        return Signed(principal: try credentials.authenticate(signedRequest: request, at: time))
    }
}
