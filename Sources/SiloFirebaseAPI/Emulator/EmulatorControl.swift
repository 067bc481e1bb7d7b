import SiloCore
import SiloHTTP
import SiloRules
import SiloServerKit
import SiloWire

/// The Firebase emulator's control endpoints, as firebase-tools serves them and its clients call them (`firebase
/// emulators:export`, `@firebase/rules-unit-testing`): `POST /internal/reset`, `PUT /internal/setRules` and
/// `POST /internal/export`. Open where the admin API is (emulator mode), else to the admin only. Their error bodies
/// are firebase-tools' own, which clients show or compare.
struct EmulatorControl {
    let service: ObjectService

    /// The largest `setRules` body: a few rules files, each up to the compiler's source limit.
    static let maxSetRulesBodyBytes = 4 << 20

    /// Nil for a method the endpoint does not serve (the router's 404).
    func handle(_ route: FirebaseRoute, _ context: RequestContext) -> RequestDisposition? {
        switch (route, context.head.method) {
        case (.internalReset, "POST"), (.internalSetRules, "PUT"), (.internalExport, "POST"): break
        default: return nil
        }
        guard context.principal?.isAdmin == true || service.configuration.openAdminAPI else {
            return .respond(Reply.firebaseError(StorageError(.permissionDenied, "Missing admin credentials.")))
        }
        switch route {
        case .internalSetRules:
            return .readBody(
                CollectingSink(limit: Self.maxSetRulesBodyBytes, refuse: { Reply.firebaseError($0) }) { body in
                    setRules(body)
                })
        case .internalExport:
            return .readBody(
                CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.firebaseError($0) }) {
                    body in export(body)
                })
        default:
            return .respond(reset())
        }
    }

    /// Everything but the stored documents goes, and the buckets that exist from the start are made again: the
    /// server is as if freshly started, with the rules it has now (as firebase-tools keeps its rules on reset).
    private func reset() -> HTTPResponse {
        do {
            try service.metadata.reset()
            for bucket in service.configuration.defaultBuckets { _ = try service.metadata.ensureBucket(bucket) }
            return Reply.empty(200)
        } catch {
            return Reply.firebaseError(error)
        }
    }

    // MARK: setRules

    private static func message(_ status: Int, _ text: String) -> HTTPResponse {
        Reply.json(status, .object(["message": .string(text)]))
    }

    /// `{"rules": {"files": [{"name", "content"}]}}`: one file is the rules of every bucket (a `resource` it carries
    /// is ignored, as firebase-tools ignores it); several files each name their bucket in `resource`. Every file is
    /// compiled before the rules in force are replaced, in one swap.
    private func setRules(_ body: [UInt8]) -> HTTPResponse {
        let missingFiles = Self.message(400, "Request body must include 'rules.files' array")
        guard let json = try? JSONValue.parse(body),
            let files = json.objectValue?["rules"]?.objectValue?["files"]?.arrayValue,
            !files.isEmpty
        else { return missingFiles }
        var sources: [RulesSource] = []
        for file in files {
            let object = file.objectValue
            guard let name = object?["name"]?.stringValue, let content = object?["content"]?.stringValue else {
                return Self.message(
                    400,
                    files.count == 1
                        ? "Each member of 'rules.files' array must contain 'name' and 'content'"
                        : "Each member of 'rules.files' array must contain 'name', 'content', and 'resource'")
            }
            guard files.count > 1 else {
                sources.append(RulesSource(name: name, content: content))
                break
            }
            guard let resource = object?["resource"]?.stringValue, !resource.isEmpty else {
                return Self.message(
                    400, "Each member of 'rules.files' array must contain 'name', 'content', and 'resource'")
            }
            guard let bucket = try? BucketName(resource) else {
                return Self.message(400, "'resource' must name a bucket; '\(resource.prefix(100))' does not")
            }
            sources.append(RulesSource(name: name, content: content, bucket: bucket))
        }
        let policy: any AccessPolicy
        do {
            policy = try RulesSource.policy(sources, statistics: service.configuration.rulesStatistics)
        } catch {
            service.logger.error(
                "rules set through /internal/setRules did not compile; keeping the rules loaded before",
                metadata: ["silo.rules.file": error.name, "silo.rules.errors": error.diagnostics])
            return Self.message(400, "There was an error updating rules, see logs for more details")
        }
        guard let swappable = service.policy as? SwappableAccessPolicy else {
            return Self.message(501, "the rules of this server cannot be replaced")
        }
        swappable.replace(with: policy)
        service.logger.notice(
            "rules replaced through /internal/setRules",
            metadata: ["silo.rules.files": sources.map(\.name).joined(separator: ", ")])
        return Self.message(200, "Rules updated successfully")
    }

    // MARK: export

    /// `{"path": DIR, "initiatedBy": …}`: the storage export written to DIR (``EmulatorExport``).
    private func export(_ body: [UInt8]) -> HTTPResponse {
        guard let json = try? JSONValue.parse(body), let path = json.objectValue?["path"]?.stringValue, !path.isEmpty
        else { return Reply.text(400, "Export request body must include 'path'.") }
        do {
            let summary = try EmulatorExport(metadata: service.metadata, blobs: service.blobs).write(to: path)
            service.logger.notice(
                "exported through /internal/export",
                metadata: [
                    "silo.export.path": path, "silo.export.buckets": "\(summary.buckets)",
                    "silo.export.objects": "\(summary.objects)",
                ])
            return Reply.text(200, "OK")
        } catch {
            service.logger.error(
                "export through /internal/export failed", metadata: ["silo.error": detailedDescription(of: error)])
            return Reply.firebaseError(error)
        }
    }
}
