import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// The JSON API's partial responses: the one stage that applies a request's `fields` selector (``FieldSelection``)
/// to whatever JSON its handler answers (an object, a bucket, a list, ACLs, a policy, an HMAC key), so a route
/// renders its whole resource and never reads `fields` itself. A media read's bytes are the object's, never selected.
struct PartialResponse {
    let selection: FieldSelection

    /// The selector of `context`'s request, checked against `vocabulary`; nil when it has none (or an empty one,
    /// which GCS ignores).
    package static func of(_ context: RequestContext, _ vocabulary: FieldVocabulary) throws -> PartialResponse? {
        guard let text = context.query["fields"], !text.isEmpty, !GCSObjectRoutes.isMediaRead(context) else {
            return nil
        }
        let selection = try FieldSelection(parsing: text)
        try vocabulary.check(selection)
        return PartialResponse(selection: selection)
    }

    /// GCS's answer to a selector it refuses: its `invalidParameter` reason, not the generic `invalid`.
    package static func refusal(_ error: any Error) -> HTTPResponse {
        let message = StorageError.wrap(error).message
        return Reply.json(400, GCSJSON.error(status: 400, message: message, reason: "invalidParameter"))
    }

    /// `disposition`'s answer, now or after its body, with only the selected members.
    package func render(_ disposition: RequestDisposition) -> RequestDisposition {
        switch disposition {
        case .respond(var response):
            render(&response)
            return .respond(response)
        case .readBody(let sink):
            return .readBody(DecoratingSink(sink) { render(&$0) })
        }
    }

    /// A successful JSON answer's body, selected; any other answer (an error, an empty body) as it is.
    func render(_ response: inout HTTPResponse) {
        guard (200..<300).contains(response.status), case .bytes(let bytes) = response.body,
            response.headers["Content-Type"]?.hasPrefix("application/json") == true,
            let value = try? JSONValue.parse(bytes)
        else { return }
        response.body = .bytes(selection.apply(to: value).serialized())
    }
}
