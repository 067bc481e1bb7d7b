import Foundation
import SiloCLI
import SiloCore

/// One `--rules` file: for every bucket without rules of its own (`bucket` nil), or for one bucket.
struct RulesFile: Equatable {
    var bucket: BucketName?
    var path: String

    /// `FILE` or `BUCKET=FILE`. A path with `=` in it whose first part is no bucket name stays a path (write
    /// `./a=b.rules` for a file named like a bucket assignment).
    init(argument: String) throws {
        if let equals = argument.firstIndex(of: "="), let bucket = try? BucketName(String(argument[..<equals])) {
            let path = String(argument[argument.index(after: equals)...])
            guard !path.isEmpty else { throw ValidationError("--rules \(argument): no file after '='") }
            self.init(bucket: bucket, path: path)
        } else {
            guard !argument.isEmpty else { throw ValidationError("--rules needs a file") }
            self.init(bucket: nil, path: argument)
        }
    }

    init(bucket: BucketName?, path: String) {
        self.bucket = bucket
        self.path = path
    }
}

/// What `silo serve` takes from a Firebase project's `firebase.json` and the `.firebaserc` beside it, as the Firebase
/// emulator reads them: `storage.rules`, or `storage: [{target, rules}]` with `.firebaserc`'s
/// `targets.PROJECT.storage.TARGET` buckets; `emulators.storage.host` and `.port`; `projects.default`. Rules paths
/// are relative to the file's directory. Anything malformed is an error naming the file and the field.
struct FirebaseProject {
    static let defaultPath = "firebase.json"

    var rules: [RulesFile] = []
    var host: String?
    var port: Int?
    var projectID: String?

    /// `project` (`--project`) chooses the deploy targets; without it, `.firebaserc`'s default project.
    init(path: String, project: String?) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let root = try Self.object(path)
        let rcPath = (directory.isEmpty ? "" : directory + "/") + ".firebaserc"
        let rc = FileManager.default.fileExists(atPath: rcPath) ? try Self.object(rcPath) : [:]

        if let projects = rc["projects"] {
            guard let projects = projects as? [String: Any] else { throw Self.error(rcPath, "projects", "an object") }
            if let id = projects["default"] {
                guard let id = id as? String, !id.isEmpty else {
                    throw Self.error(rcPath, "projects.default", "a project id")
                }
                projectID = id
            }
        }
        if let emulators = root["emulators"] {
            guard let emulators = emulators as? [String: Any] else {
                throw Self.error(path, "emulators", "an object")
            }
            if let storage = emulators["storage"] {
                guard let storage = storage as? [String: Any] else {
                    throw Self.error(path, "emulators.storage", "an object")
                }
                if let host = storage["host"] {
                    guard let host = host as? String, !host.isEmpty else {
                        throw Self.error(path, "emulators.storage.host", "an address")
                    }
                    self.host = host
                }
                if let port = storage["port"] {
                    let number =
                        (port as? NSNumber).flatMap { Int(exactly: $0.doubleValue) }
                        ?? (port as? String).flatMap {
                            Int($0)
                        }
                    guard let number, (0...65535).contains(number) else {
                        throw Self.error(path, "emulators.storage.port", "a port number")
                    }
                    self.port = number
                }
            }
        }

        func rulesFile(_ value: Any?, field: String, bucket: BucketName?) throws -> RulesFile {
            guard let relative = value as? String, !relative.isEmpty else { throw Self.error(path, field, "a file") }
            let file = relative.hasPrefix("/") || directory.isEmpty ? relative : directory + "/" + relative
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw ValidationError("\(path): \(field): cannot read the rules file \(file)")
            }
            return RulesFile(bucket: bucket, path: file)
        }

        switch root["storage"] {
        case nil:
            break
        case let storage as [String: Any]:
            rules = [try rulesFile(storage["rules"], field: "storage.rules", bucket: nil)]
        case let targets as [Any]:
            let project = project ?? projectID
            for (index, entry) in targets.enumerated() {
                let field = "storage[\(index)]"
                guard let entry = entry as? [String: Any] else { throw Self.error(path, field, "an object") }
                guard let target = entry["target"] as? String, !target.isEmpty else {
                    throw Self.error(path, field + ".target", "a deploy target name")
                }
                guard let project else {
                    throw ValidationError(
                        "\(path): \(field).target '\(target)' needs a project: no --project and no projects.default in \(rcPath)"
                    )
                }
                let mapping =
                    ((rc["targets"] as? [String: Any])?[project] as? [String: Any])?["storage"] as? [String: Any]
                let names = mapping?[target] as? [String] ?? []
                guard !names.isEmpty else {
                    throw ValidationError(
                        "\(path): \(field).target '\(target)' has no bucket: \(rcPath) has no targets.\(project).storage.\(target)"
                    )
                }
                for name in names {
                    guard let bucket = try? BucketName(name) else {
                        throw ValidationError(
                            "\(rcPath): targets.\(project).storage.\(target): '\(name)' is not a bucket name")
                    }
                    guard !rules.contains(where: { $0.bucket == bucket }) else {
                        throw ValidationError("\(path): \(field): bucket \(name) has rules from two targets")
                    }
                    rules.append(try rulesFile(entry["rules"], field: field + ".rules", bucket: bucket))
                }
            }
        default:
            throw Self.error(path, "storage", "an object or an array of {target, rules}")
        }
    }

    private static func object(_ path: String) throws -> [String: Any] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read \(path)")
        }
        guard let json = try? JSONSerialization.jsonObject(with: data), let object = json as? [String: Any] else {
            throw ValidationError("\(path) is not a JSON object")
        }
        return object
    }

    private static func error(_ path: String, _ field: String, _ expected: String) -> ValidationError {
        ValidationError("\(path): \(field) must be \(expected)")
    }
}
