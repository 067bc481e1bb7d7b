import SiloAuth
import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// `POST /{bucket}` with a `multipart/form-data` body: an HTML form upload, signed with a V4 POST policy
/// (`generate_signed_post_policy_v4`) or unsigned. The fields come first and `file` last; everything is decided
/// when `file` begins — the policy's signature and its conditions (``SiloAuth/PostPolicyDocument``), then the
/// signer's permission to write the object (``GCSAccess``) — before its first byte is stored. The file then
/// streams into a blob, held to the policy's `content-length-range` as it arrives. Fields after `file` are ignored.
///
/// `key` names the object (`${filename}` is the file's name); `Content-Type`, `Cache-Control`,
/// `Content-Disposition`, `Content-Encoding`, `Content-Language`, `x-goog-custom-time`, `x-goog-meta-*` and `acl` (a
/// canned ACL) set its metadata. Any field GCS's forms do not take is refused (``formFields``). The answer is 204, or
/// what `success_action_status` (200, 201 with a `PostResponse` document) or `success_action_redirect` (303 to it,
/// with `bucket`, `key` and `etag` added to its query) asks for.
struct PostPolicyUpload {
    let service: ObjectService

    static let maxFields = 64
    /// The policy field is the largest (a long list of conditions, base64).
    static let maxFieldBytes = PostPolicyDocument.maxPolicyBytes

    package func handle(_ context: RequestContext, _ bucket: BucketName) -> RequestDisposition {
        do { try service.requireBucket(bucket) } catch { return .respond(Reply.xmlError(error)) }
        guard
            let boundary = MultipartParser.boundary(
                fromContentType: context.headers["Content-Type"], mediaType: "multipart/form-data")
        else {
            return .respond(
                Reply.xmlError(
                    StorageError(.invalidArgument, "a POST to a bucket is a multipart/form-data form upload")))
        }
        let parser = MultipartParser(
            formBoundary: boundary, maxFieldBytes: Self.maxFieldBytes, maxFields: Self.maxFields)
        return .readBody(
            FormUploadSink(service: service, parser: parser) { form, filename, contentType in
                try plan(context, bucket, form, filename: filename, contentType: contentType)
            })
    }

    /// The fields a GCS form may carry: GCS refuses any other with 400, even one the policy names.
    /// `content-length` and `expires` are taken and not used. V2 policy fields (`GoogleAccessId`, `signature`) are
    /// not among them: Silo takes V4 policies only.
    static let formFields: Set<String> = [
        "acl", "bucket", "cache-control", "content-disposition", "content-encoding", "content-language",
        "content-length", "content-type", "expires", "file", "key", "policy", "success_action_redirect",
        "success_action_status", "x-goog-algorithm", "x-goog-credential", "x-goog-custom-time", "x-goog-date",
        "x-goog-signature",
    ]

    /// Refuses a field GCS's forms do not take (names are lowercased by the sink); `x-goog-meta-*` set metadata,
    /// `x-ignore-*` are the client's own.
    static func checkFieldNames(_ form: [String: String]) throws {
        for name in form.keys.sorted()
        where !formFields.contains(name) && !name.hasPrefix("x-goog-meta-") && !name.hasPrefix("x-ignore-") {
            throw StorageError(
                .invalidArgument,
                "the form field '\(name.prefix(80))' is not one a form upload takes (x-goog-meta-* and x-ignore-* are)")
        }
    }

    /// What the form asks for, once its fields are in.
    struct Plan {
        var bucket: BucketName
        var name: ObjectName
        var fields: ObjectFields
        var sizes: (min: Int64, max: Int64)?
        var principal: Principal?
        var status: Int
        var redirect: String?
        var time: Timestamp
        var externalBase: String
    }

    private func plan(
        _ context: RequestContext, _ bucket: BucketName, _ form: [String: String], filename: String?,
        contentType: String?
    ) throws -> Plan {
        try Self.checkFieldNames(form)
        guard let key = form["key"], !key.isEmpty else { throw StorageError(.invalidArgument, "the form has no key") }
        let name = try ObjectName(Self.substituting(filename ?? "", in: key))
        var principal = context.principal
        var sizes: (min: Int64, max: Int64)?
        if let policy = form["policy"] {
            do {
                let signer = try service.serviceAccounts.signer(ofPolicy: policy, field: { form[$0] }, at: context.time)
                let document = try PostPolicyDocument(base64: policy)
                var checked = form
                checked["bucket"] = bucket.rawValue
                try document.check(fields: checked, at: context.time)
                sizes = document.contentLengthRange
                // A form signed by an unregistered key in emulator mode carries no identity.
                principal = signer.map { ServiceAccountCredentials.principal($0, credential: "") }
            } catch {
                throw ServiceAccountCredentials.storageError(error)
            }
        } else if form["x-goog-signature"] != nil {
            throw StorageError(.invalidArgument, "the form has an x-goog-signature but no policy")
        }
        if let refusal = GCSAccess(service: service).refusal(GCSPermissions.write(bucket, name), principal) {
            throw refusal
        }
        let status = try form["success_action_status"].map { text in
            guard let status = Int(text), [200, 201, 204].contains(status) else {
                throw StorageError(.invalidArgument, "success_action_status must be 200, 201 or 204")
            }
            return status
        }
        return Plan(
            bucket: bucket, name: name,
            fields: try fields(form, contentType: contentType, bucket, name, principal, context.time),
            sizes: sizes, principal: principal, status: status ?? 204, redirect: form["success_action_redirect"],
            time: context.time, externalBase: service.externalBase(context))
    }

    /// The object's metadata from the form's fields, as a GCS upload applies it.
    private func fields(
        _ form: [String: String], contentType: String?, _ bucket: BucketName, _ name: ObjectName,
        _ principal: Principal?, _ time: Timestamp
    ) throws -> ObjectFields {
        var json: JSONObject = [
            "contentType": .string(
                form["content-type"] ?? contentType.flatMap { $0.isEmpty ? nil : $0 }
                    ?? "application/octet-stream")
        ]
        let headers = [
            "cache-control": "cacheControl", "content-disposition": "contentDisposition",
            "content-encoding": "contentEncoding", "content-language": "contentLanguage",
            "x-goog-custom-time": "customTime",
        ]
        for (field, key) in headers.sorted(by: { $0.key < $1.key }) {
            if let value = form[field] { json[key] = .string(value) }
        }
        let custom = form.filter { $0.key.hasPrefix("x-goog-meta-") }.sorted { $0.key < $1.key }
        if !custom.isEmpty {
            var metadata = JSONObject()
            for (key, value) in custom { metadata[String(key.dropFirst(12))] = .string(value) }
            json["metadata"] = .object(metadata)
        }
        var fields = ObjectFields()
        try UploadFields.parseChanges(JSONValue.object(json).serialized())?.apply(to: &fields)
        let resource = try service.bucketResource(bucket)
        try ObjectResource.apply(
            ObjectExtrasChanges(), to: &fields, existing: nil, bucket: resource,
            query: try QueryParameters(HTTPRequestHead(method: "POST", rawPath: "/")), principal: principal,
            replacing: false, now: time, object: "\(bucket)/\(name)")
        if let acl = form["acl"] {
            if resource?.uniformBucketLevelAccess == true { throw ObjectResource.uniformAccessError }
            let entries = try ObjectResource.predefined(acl.filter { $0 != "-" }, owner: fields.extras.owner)
            if resource?.publicAccessPreventionEnforced == true,
                entries.contains(where: { $0.entity == "allUsers" || $0.entity == "allAuthenticatedUsers" })
            {
                throw BucketResource.publicAccessPrevented
            }
            fields.extras.acl = ACLEntry.json(entries)
        }
        try fields.validate()
        return fields
    }

    /// `key` with every `${filename}` replaced.
    static func substituting(_ filename: String, in key: String) -> String {
        key.split(separator: "${filename}", omittingEmptySubsequences: false).joined(separator: filename)
    }

    /// Stores what was streamed and answers as the form asked.
    package static func commit(_ service: ObjectService, _ plan: Plan, _ blob: IngestedBlob) throws -> HTTPResponse {
        let summary = blob.summary
        let record = try service.commitUpload(
            bucket: plan.bucket, name: plan.name, blob: blob, fields: plan.fields,
            conditions: Preconditions(), principal: plan.principal, access: .gcs, time: Timestamp.now(),
            createsBucket: false)
        let etag = "\"" + summary.md5.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "\""
        var headers: HTTPHeaders = ["ETag": etag, "x-goog-generation": String(record.generation)]
        if let redirect = plan.redirect {
            let separator = redirect.contains("?") ? "&" : "?"
            headers.set(
                "Location",
                redirect + separator + "bucket=\(PercentCoding.encodeComponent(plan.bucket.rawValue))"
                    + "&key=\(PercentCoding.encodeComponent(plan.name.rawValue))&etag=\(PercentCoding.encodeComponent(etag))"
            )
            return Reply.empty(303, headers: headers)
        }
        guard plan.status == 201 else { return Reply.empty(plan.status, headers: headers) }
        headers.set("Content-Type", "application/xml; charset=UTF-8")
        let location =
            "\(plan.externalBase)/\(PercentCoding.encodeComponent(plan.bucket.rawValue))/"
            + plan.name.rawValue.split(separator: "/", omittingEmptySubsequences: false)
            .map { PercentCoding.encodeComponent($0) }.joined(separator: "/")
        let body =
            "<?xml version='1.0' encoding='UTF-8'?><PostResponse><Location>\(XMLText.escape(location))</Location>"
            + "<Bucket>\(XMLText.escape(plan.bucket.rawValue))</Bucket><Key>\(XMLText.escape(plan.name.rawValue))</Key>"
            + "<ETag>\(XMLText.escape(etag))</ETag></PostResponse>"
        return HTTPResponse(status: 201, headers: headers, body: .bytes(Array(body.utf8)))
    }
}

/// The form's body: fields collected, `file` streamed once ``PostPolicyUpload/Plan`` allows it.
private final class FormUploadSink: BoundedBodySink {
    private var parser: MultipartParser
    private let decide: ([String: String], String?, String?) throws -> PostPolicyUpload.Plan
    private var form: [String: String] = [:]
    private var plan: PostPolicyUpload.Plan?
    private var blob = StreamedBodyBlob()
    private let service: ObjectService

    init(
        service: ObjectService, parser: MultipartParser,
        decide: @escaping ([String: String], String?, String?) throws -> PostPolicyUpload.Plan
    ) {
        self.service = service
        self.parser = parser
        self.decide = decide
    }

    /// The fields a form may carry, the largest object, and the framing around them.
    package var maxBodyBytes: Int64 {
        let fields = Int64(PostPolicyUpload.maxFields) * Int64(PostPolicyUpload.maxFieldBytes)
        let bound = service.configuration.maxObjectSize.addingReportingOverflow(
            fields + DeclaredLength.multipartFraming(parts: PostPolicyUpload.maxFields + 1))
        return bound.overflow ? .max : bound.partialValue
    }

    package func refuse(_ error: StorageError) -> HTTPResponse { Reply.xmlError(error) }

    package func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? {
        do {
            try parser.feed(chunk) { event in
                switch event {
                case .field(let name, let value):
                    guard let text = String(validating: value, as: UTF8.self) else {
                        throw StorageError(.invalidArgument, "the form field '\(name.prefix(80))' is not UTF-8")
                    }
                    guard form.updateValue(text, forKey: name.lowercased()) == nil else {
                        throw StorageError(.invalidArgument, "the form field '\(name.prefix(80))' is given twice")
                    }
                case .fileStart(let filename, let contentType):
                    let plan = try decide(form, filename, contentType)
                    self.plan = plan
                    blob.start(try BlobIngest(service: service, time: plan.time))
                case .mediaBytes(let bytes):
                    guard let ingest = blob.ingest, let plan else { return }
                    if let sizes = plan.sizes, ingest.size + Int64(bytes.count) > sizes.max {
                        throw Self.outside(sizes)
                    }
                    try ingest.write(bytes)
                case .metadata, .mediaStart:
                    break
                }
            }
            return nil
        } catch {
            return failed(error)
        }
    }

    package func finish() -> HTTPResponse {
        do {
            try parser.finish()
            let missing = StorageError(.invalidArgument, "the form has no file field")
            guard let plan else { throw missing }
            if let sizes = plan.sizes, let ingest = blob.ingest, ingest.size < sizes.min { throw Self.outside(sizes) }
            return try blob.finish(missing: missing) { _, stored in try PostPolicyUpload.commit(service, plan, stored) }
        } catch {
            return failed(error)
        }
    }

    package func abort() { blob.abandon() }

    /// Parsed or collected from the transport's buffers: nothing to lend.
    func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }

    private func failed(_ error: any Error) -> HTTPResponse {
        blob.fail()
        return Reply.xmlError(error)
    }

    private static func outside(_ sizes: (min: Int64, max: Int64)) -> StorageError {
        StorageError(
            .invalidArgument,
            "the file's size is outside the policy's content-length-range (\(sizes.min) to \(sizes.max) bytes)")
    }
}
