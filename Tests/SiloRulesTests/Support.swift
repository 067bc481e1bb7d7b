import SiloCore
import SiloRules
import Testing

/// Builders for access requests, so that each spec case reads like its table row.
enum Fixture {
    static let bucket = try! BucketName("B")
    static let now = Timestamp(microseconds: 1_700_000_000_000_000)

    static func principal(_ uid: String?, claims: String? = nil) -> Principal? {
        guard let uid else { return nil }
        let json = claims ?? #"{"sub":"\#(uid)","user_id":"\#(uid)"}"#
        return Principal(
            scheme: "Firebase", credential: "t", uid: uid, claimsJSON: json, isAdmin: false, verified: true)
    }

    static func object(
        _ name: String, size: Int64 = 10, contentType: String? = "image/png", metadata: [String: String] = [:]
    ) -> ObjectRecord {
        ObjectRecord(
            bucket: bucket, name: try! ObjectName(name), generation: 1_600_000_000_000_000, metageneration: 1,
            blob: BlobSummary(size: size, md5: Array(repeating: 0xAB, count: 16), crc32c: 0x1234_5678),
            blobID: BlobID(rawValue: String(repeating: "a", count: 32))!,
            fields: ObjectFields(contentType: contentType, customMetadata: metadata),
            timeCreated: Timestamp(microseconds: 1_600_000_000_000_000),
            updated: Timestamp(microseconds: 1_600_000_000_000_000))
    }

    static func request(
        _ op: AccessRequest.Operation, _ path: String, uid: String? = "u1", claims: String? = nil,
        existing: ObjectRecord? = nil, size: Int64? = nil, contentType: String? = nil, metadata: [String: String]? = nil
    ) -> AccessRequest {
        var fields: ObjectFields?
        if op == .create || op == .update {
            fields = existing?.fields ?? ObjectFields()
            if let contentType { fields!.contentType = contentType }
            if let metadata { fields!.customMetadata = metadata }
        }
        return AccessRequest(
            operation: op, bucket: bucket, path: path, principal: principal(uid, claims: claims), resource: existing,
            proposedFields: fields, proposedSize: op == .create || op == .update ? (size ?? existing?.size ?? 0) : nil,
            time: now)
    }

    static func compile(_ source: String) throws -> RulesProgram {
        do {
            return try RulesProgram.compile(source: source, fileName: "test.rules")
        } catch {
            Issue.record("compile failed:\n\(error.formatted)")
            throw error
        }
    }

    /// Evaluates `expression` as the condition of `allow read` on `/b/B/o/x`; true only if it granted.
    static func holds(_ expression: String, version: String = "2") throws -> Bool {
        let program = try compile(
            "rules_version = '\(version)';\nservice firebase.storage {\n  match /b/{bucket}/o/{x} {\n"
                + "    allow read: if \(expression);\n  }\n}\n")
        return RulesAccessPolicy(program: program).allows(request(.get, "x"))
    }
}

/// One row of a spec table.
struct Case: CustomTestStringConvertible, Sendable {
    var id: String
    var request: AccessRequest
    var allowed: Bool
    var testDescription: String { "\(id) \(request.operation.rawValue) \(request.path) → \(allowed ? "A" : "D")" }

    init(_ id: String, _ request: AccessRequest, _ allowed: Bool) {
        self.id = id
        self.request = request
        self.allowed = allowed
    }
}

extension Case {
    static let A = true
    static let D = false
}
