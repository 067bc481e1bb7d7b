package import SiloHTTP

/// The JSON API operation id of a request (`storage.objects.get`, `storage.buckets.list`, …), as GCS's discovery
/// document names its methods: what a retry test's instructions are keyed by (`--test-faults`). The one table from
/// routes to names; XML API requests get the names storage-testbench gives them (GET of an object is
/// `storage.objects.get`, PUT and POST of one `storage.objects.insert`).
extension GCSRoute {
    private static let objectsInsert = "storage.objects.insert"
    private static let objectsGet = "storage.objects.get"

    /// Nil for requests no operation names (batches, the token endpoint, unknown paths).
    package func operationID(_ head: HTTPRequestHead) -> String? {
        let method = head.method == "HEAD" ? "GET" : head.method
        switch self {
        case .gcsBuckets:
            return ["GET": "storage.buckets.list", "POST": "storage.buckets.insert"][method]
        case .gcsBucket:
            return Self.resource("storage.buckets", method)
        case .gcsBucketSub(_, let path):
            return Self.bucketSub(path, method)
        case .gcsObjects:
            return method == "GET" ? "storage.objects.list" : method == "POST" ? Self.objectsInsert : nil
        case .gcsObject:
            return Self.resource("storage.objects", method)
        case .gcsObjectSub(_, _, let path):
            switch path.first {
            case "acl": return Self.acl("storage.object_acl", path, method)
            case "restore": return method == "POST" ? "storage.objects.restore" : nil
            case "moveTo": return method == "POST" ? "storage.objects.move" : nil
            default: return nil
            }
        case .gcsCopy(_, _, _, _, let rewrite):
            guard method == "POST" else { return nil }
            return rewrite ? "storage.objects.rewrite" : "storage.objects.copy"
        case .gcsCompose:
            return method == "POST" ? "storage.objects.compose" : nil
        case .gcsUpload:
            // Cancelling a resumable session is a DELETE of its URL, which the testbench counts as a delete.
            if method == "DELETE" { return "storage.objects.delete" }
            return method == "POST" || method == "PUT" ? Self.objectsInsert : nil
        case .gcsServiceAccount:
            return method == "GET" ? "storage.serviceaccount.get" : nil
        case .gcsHMACKeys:
            return Self.hmacKeys(head.rawPath, method)
        case .xmlObject:
            return method == "GET" ? Self.objectsGet : method == "PUT" || method == "POST" ? Self.objectsInsert : nil
        default:
            // Batches (each call inside is a request of its own), XML bucket requests.
            return nil
        }
    }

    /// Every name a retry test may key instructions by: the names above, and those of resources Silo does not
    /// serve (a test for them can be created; its instructions apply to the 501 answers).
    static let operationIDs: Set<String> = {
        var names: Set<String> = [
            "storage.buckets.list", "storage.buckets.insert", "storage.buckets.lockRetentionPolicy",
            "storage.buckets.getIamPolicy", "storage.buckets.setIamPolicy", "storage.buckets.testIamPermissions",
            "storage.buckets.restore", "storage.objects.list", "storage.objects.restore", "storage.objects.move",
            "storage.objects.rewrite", "storage.objects.copy", "storage.objects.compose",
            "storage.serviceaccount.get", "storage.hmacKey.list", "storage.hmacKey.create",
        ]
        for kind in ["storage.buckets", "storage.objects", "storage.hmacKey"] {
            for verb in ["get", "update", "patch", "delete"] { names.insert("\(kind).\(verb)") }
        }
        names.insert(objectsInsert)
        for kind in ["storage.bucket_acl", "storage.default_object_acl", "storage.object_acl"] {
            for verb in ["list", "insert", "get", "update", "patch", "delete"] { names.insert("\(kind).\(verb)") }
        }
        for verb in ["list", "insert", "get", "delete"] {
            names.insert("storage.notifications.\(verb)")
            names.insert("storage.managedFolders.\(verb)")
        }
        return names
    }()

    /// GET, PUT, PATCH and DELETE of one resource.
    private static func resource(_ kind: String, _ method: String) -> String? {
        switch method {
        case "GET": "\(kind).get"
        case "PUT": "\(kind).update"
        case "PATCH": "\(kind).patch"
        case "DELETE": "\(kind).delete"
        default: nil
        }
    }

    /// `acl` (list, insert) and `acl/{entity}` (get, update, patch, delete).
    private static func acl(_ kind: String, _ path: [String], _ method: String) -> String? {
        if path.count == 1 { return ["GET": "\(kind).list", "POST": "\(kind).insert"][method] }
        return path.count == 2 ? resource(kind, method) : nil
    }

    private static func bucketSub(_ path: [String], _ method: String) -> String? {
        switch path.first {
        case "acl": return acl("storage.bucket_acl", path, method)
        case "defaultObjectAcl": return acl("storage.default_object_acl", path, method)
        case "iam":
            if path.count == 2 && path[1] == "testPermissions" { return "storage.buckets.testIamPermissions" }
            return path.count == 1
                ? ["GET": "storage.buckets.getIamPolicy", "PUT": "storage.buckets.setIamPolicy"][method] : nil
        case "lockRetentionPolicy": return method == "POST" ? "storage.buckets.lockRetentionPolicy" : nil
        case "restore": return method == "POST" ? "storage.buckets.restore" : nil
        case "notificationConfigs": return collection("storage.notifications", path, method)
        case "managedFolders": return collection("storage.managedFolders", path, method)
        default: return nil
        }
    }

    /// A collection (list, insert) and its members (get, delete).
    private static func collection(_ kind: String, _ path: [String], _ method: String) -> String? {
        if path.count == 1 { return ["GET": "\(kind).list", "POST": "\(kind).insert"][method] }
        return path.count == 2 ? ["GET": "\(kind).get", "DELETE": "\(kind).delete"][method] : nil
    }

    /// `projects/{p}/hmacKeys[/{id}]` (routed as unimplemented; named from the path).
    private static func hmacKeys(_ rawPath: String, _ method: String) -> String? {
        let segments = rawPath.split(separator: "/")
        guard let index = segments.firstIndex(of: "hmacKeys"), index >= 2, segments[index - 2] == "projects" else {
            return nil
        }
        if index == segments.count - 1 {
            return ["GET": "storage.hmacKey.list", "POST": "storage.hmacKey.create"][method]
        }
        return index == segments.count - 2 ? resource("storage.hmacKey", method) : nil
    }
}
