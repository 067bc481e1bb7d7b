import SiloCore
import SiloHTTP
import SiloServerKit

/// The GCS JSON API's errors, with `errors[].reason`; a media read's 404 is plain text, as GCS answers it.
struct GCSJSONAPIErrorShape: ErrorShape {
    func answer(_ error: any Error) -> HTTPResponse { Reply.gcsError(error) }

    func answer(_ error: any Error, for route: any RouteTarget, _ context: RequestContext) -> HTTPResponse {
        if case .gcsObject? = (route as? GCSTarget)?.route, GCSObjectRoutes.isMediaRead(context),
            let storage = error as? StorageError,
            storage.code == .notFound
        {
            return Reply.text(404, storage.message)
        }
        return answer(error)
    }
}

/// The XML API's errors, `<Error><Code>…</Code><Message>…</Message></Error>`; a bucket not served is
/// `NoSuchBucket`.
struct XMLErrorShape: ErrorShape {
    func answer(_ error: any Error) -> HTTPResponse { Reply.xmlError(error) }

    func notServed(_ error: StorageError, _ route: any RouteTarget, _ context: RequestContext) -> HTTPResponse {
        Reply.xmlError(error, code: XMLErrorCode.noSuchBucket)
    }
}
