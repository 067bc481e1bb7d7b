import SiloCore
import SiloHTTP
import SiloRules
import SiloServerKit
import SiloWire

/// The console's own endpoints (docs/console.md), for what no storage API says:
/// - `GET /console/api/session`: whether this caller is the admin and whether the server needs a key at all;
/// - `GET /console/api/rules`: the Security Rules in force, as source text;
/// - `POST /console/api/rules/explain`: a simulated request decided by those rules (or by a draft sent along), with
///   the explain trace of every `match` and `allow` statement tried (``RulesExplanation``).
/// Rules and explanations are the admin's: a caller with an admin key, or anyone in emulator mode.
/// Only the console's own page calls them: no CORS answer is ever given here (``CORS``), and a browser's request
/// that says it comes from another origin (`Sec-Fetch-Site`, which a page cannot set) is refused before anything
/// is read.
struct ConsoleAPI: Sendable {
    let service: ObjectService

    func handle(_ context: RequestContext, _ path: [String]) -> RequestDisposition {
        if let site = context.headers["Sec-Fetch-Site"], !Self.sameOrigin(site) {
            return .respond(
                Reply.gcsError(
                    StorageError(.permissionDenied, "The console's API answers the console's own page only.")))
        }
        let admin = context.principal?.isAdmin == true || service.configuration.openAdminAPI
        switch (context.method, path) {
        case ("GET", ["session"]):
            return .respond(
                Self.json(
                    .object([
                        "admin": .bool(admin),
                        "signInRequired": .bool(!service.configuration.openAdminAPI),
                        "rulesLoaded": .bool(admin ? Self.program(service.policy) != nil : false),
                    ])))
        case ("GET", ["rules"]), ("POST", ["rules", "explain"]):
            guard admin else {
                return .respond(
                    Reply.gcsError(StorageError(.permissionDenied, "The rules playground needs an admin key.")))
            }
            if context.method == "GET" { return .respond(rules()) }
            return .readBody(
                CollectingSink(limit: Self.maxExplainBodyBytes, refuse: { Reply.gcsError($0) }) { [self] body in
                    do {
                        return try explain(body, time: context.time)
                    } catch {
                        return Reply.gcsError(StorageError.wrap(error))
                    }
                })
        default:
            let known = ["session", "rules", "rules/explain"].contains(path.joined(separator: "/"))
            return .respond(
                Reply.gcsError(
                    known
                        ? StorageError(.methodNotAllowed, "\(context.method) is not supported here")
                        : StorageError(
                            .notFound, "No console API /console/api/\(path.joined(separator: "/").prefix(100))")
                ))
        }
    }

    /// `Sec-Fetch-Site` (Fetch Metadata Request Headers §2.1) of a request the console's page made (`same-origin`)
    /// or one a person made by opening the URL (`none`); `same-site` is another port or subdomain, another origin.
    static func sameOrigin(_ site: String) -> Bool {
        equalsIgnoringCase(site, "same-origin") || equalsIgnoringCase(site, "none")
    }

    /// A draft ruleset up to the compiler's own source limit, plus the request's fields.
    static let maxExplainBodyBytes = 300 << 10

    private func rules() -> HTTPResponse {
        guard let program = Self.program(service.policy) else {
            return Self.json(.object(["loaded": .bool(false)]))
        }
        return Self.json(
            .object([
                "loaded": .bool(true), "fileName": .string(program.fileName), "version": .number(program.version),
                "source": .string(program.source),
            ]))
    }

    private func explain(_ body: [UInt8], time: Timestamp) throws -> HTTPResponse {
        let input = try SimulatedRequest(json: body)
        var program = Self.program(service.policy, bucket: input.bucket)
        var rulesName = "current"
        if let draft = input.draftRules {
            do {
                program = try RulesProgram.compile(source: draft, fileName: "draft.rules")
            } catch {
                throw StorageError(.invalidArgument, error.formatted)
            }
            rulesName = "draft"
        }
        // The object as it is now is what `resource` is in a real request on that path.
        var resource: ObjectRecord?
        if input.operation != .create, input.operation != .list, let name = try? ObjectName(input.path) {
            resource = try service.object(input.bucket, name, generation: nil)
        }
        var request = AccessRequest(
            operation: input.operation, bucket: input.bucket, path: input.path, principal: input.principal,
            resource: resource, time: time)
        if input.operation == .create || input.operation == .update {
            var fields = resource?.fields ?? ObjectFields()
            if let contentType = input.contentType { fields.contentType = contentType }
            if let metadata = input.customMetadata { fields.customMetadata = metadata }
            request.proposedFields = fields
            request.proposedSize = input.size ?? resource?.size ?? 0
        }
        guard let program else {
            let allowed = service.policy.allows(request)
            return Self.json(
                .object([
                    "rules": .string("none"), "allowed": .bool(allowed),
                    "reason": .string(
                        allowed
                            ? "allowed: no rules are loaded, and this server allows every request (emulator mode)"
                            : "denied: no rules are loaded"),
                    "decidingStep": .null, "steps": .array([]), "debug": .array([]), "truncated": .bool(false),
                ]))
        }
        let explanation = program.explain(request)
        return Self.json(Self.render(explanation, rules: rulesName, resourceExists: resource != nil))
    }

    static func render(_ e: RulesExplanation, rules: String, resourceExists: Bool) -> JSONValue {
        .object([
            "rules": .string(rules),
            "allowed": .bool(e.allowed),
            "reason": .string(e.reason),
            "decidingStep": e.decidingStep.map { .number($0) } ?? .null,
            "steps": .array(
                e.steps.map { step in
                    .object([
                        "kind": .string(step.kind.rawValue), "statement": .string(step.statement),
                        "line": .number(step.line), "column": .number(step.column), "depth": .number(step.depth),
                        "outcome": .string(step.outcome.rawValue), "detail": .string(step.detail),
                    ])
                }),
            "debug": .array(e.debug.map { .string($0) }),
            "truncated": .bool(e.truncated),
            "expressionsEvaluated": .number(e.expressionsEvaluated),
            "resourceExists": .bool(resourceExists),
        ])
    }

    /// The rules program behind the server's policy, if it is one (the executable wraps it to reload it): the one
    /// for `bucket` when rules differ by bucket, else the one for every bucket (or the first bucket's).
    static func program(_ policy: any AccessPolicy, bucket: BucketName? = nil) -> RulesProgram? {
        let current = (policy as? SwappableAccessPolicy)?.policy ?? policy
        if let byBucket = current as? BucketRulesPolicy {
            if let bucket { return byBucket.rules(for: bucket)?.program }
            let first = byBucket.buckets.min { $0.key.rawValue < $1.key.rawValue }?.value
            return (byBucket.fallback ?? first)?.program
        }
        return (current as? RulesAccessPolicy)?.program
    }

    private static func json(_ value: JSONValue) -> HTTPResponse {
        var headers = ConsoleRoutes.securityHeaders
        headers.set("Cache-Control", "no-store")
        return Reply.json(200, value, headers: headers)
    }
}

/// The body of `POST /console/api/rules/explain`, validated:
/// `{"operation": "get", "bucket": "b", "path": "a/b.png", "auth": {"uid": "u1", "token": {…claims}},
///   "contentType": "image/png", "size": 123, "metadata": {"k": "v"}, "rules": "…draft source…"}`;
/// `auth`, the proposed fields and `rules` are optional.
struct SimulatedRequest {
    var operation: AccessRequest.Operation
    var bucket: BucketName
    var path: String
    var principal: Principal?
    var contentType: String?
    var size: Int64?
    var customMetadata: [String: String]?
    var draftRules: String?

    init(json body: [UInt8]) throws {
        let value: JSONValue
        do { value = try JSONValue.parse(body) } catch {
            throw StorageError(.invalidArgument, "the explain request is not JSON: \(error)")
        }
        guard let object = value.objectValue else {
            throw StorageError(.invalidArgument, "the explain request must be a JSON object")
        }
        guard let op = object["operation"]?.stringValue, let operation = AccessRequest.Operation(rawValue: op) else {
            throw StorageError(.invalidArgument, "operation must be one of get, list, create, update, delete")
        }
        self.operation = operation
        guard let bucketText = object["bucket"]?.stringValue else {
            throw StorageError(.invalidArgument, "bucket is required")
        }
        bucket = try BucketName(bucketText)
        guard let path = object["path"]?.stringValue else { throw StorageError(.invalidArgument, "path is required") }
        // A list names a prefix: `a/b/` and `a/b` are the same path to the rules.
        let trimmed = operation == .list && path.hasSuffix("/") ? String(path.dropLast()) : path
        guard trimmed.utf8.count <= 1024, FieldText.isValid(trimmed) else {
            throw StorageError(.invalidArgument, "path must be at most 1024 bytes without control characters")
        }
        if operation != .list || !trimmed.isEmpty { _ = try ObjectName(trimmed) }
        self.path = trimmed
        if let auth = object["auth"], !auth.isNull {
            guard let authObject = auth.objectValue, let uid = authObject["uid"]?.stringValue,
                (1...128).contains(uid.utf8.count), FieldText.isValid(uid)
            else {
                throw StorageError(
                    .invalidArgument, "auth must be null or {\"uid\": \"1 to 128 characters\", \"token\": {…}}")
            }
            var claims = JSONObject()
            if let token = authObject["token"], !token.isNull {
                guard let tokenObject = token.objectValue else {
                    throw StorageError(.invalidArgument, "auth.token must be a JSON object of claims")
                }
                claims = tokenObject
            }
            if claims["sub"] == nil { claims["sub"] = .string(uid) }
            if claims["user_id"] == nil { claims["user_id"] = .string(uid) }
            principal = Principal(
                scheme: "Bearer", credential: "", uid: uid, claimsJSON: JSONValue.object(claims).serializedString,
                isAdmin: false, verified: true)
        }
        if let type = object["contentType"], !type.isNull {
            guard let text = type.stringValue, text.utf8.count <= 256, FieldText.isValid(text) else {
                throw StorageError(.invalidArgument, "contentType must be a string of at most 256 bytes")
            }
            contentType = text
        }
        if let sizeValue = object["size"], !sizeValue.isNull {
            guard let n = sizeValue.int64Value, n >= 0 else {
                throw StorageError(.invalidArgument, "size must be a non-negative integer")
            }
            size = n
        }
        if let metadata = object["metadata"], !metadata.isNull {
            guard let members = metadata.objectValue?.members, members.count <= 256 else {
                throw StorageError(.invalidArgument, "metadata must be an object of at most 256 string values")
            }
            var map: [String: String] = [:]
            for (key, value) in members {
                guard let text = value.stringValue else {
                    throw StorageError(.invalidArgument, "metadata values must be strings (\(key.prefix(60)))")
                }
                map[key] = text
            }
            customMetadata = map
        }
        if let rules = object["rules"], !rules.isNull {
            guard let text = rules.stringValue else { throw StorageError(.invalidArgument, "rules must be a string") }
            draftRules = text
        }
    }
}
