import SiloCore
import SiloWire

/// Object lifecycle management (GCS's `lifecycle.rule`), run by the maintenance pass at the time it is given, so
/// tests can advance the clock. A version is acted on when every condition of a rule holds (GCS: conditions are
/// ANDed, rules are ORed; `Delete` wins over `SetStorageClass`). Deletes go through the same path as a client's —
/// holds, retention and soft delete apply; a live version in a versioned bucket becomes noncurrent.
/// `AbortIncompleteMultipartUpload` aborts the XML multipart uploads of the bucket begun `age` days ago or more (and
/// matching `matchesPrefix` / `matchesSuffix`, the other conditions GCS allows for it).
struct Lifecycle {
    let service: ObjectService
    let now: Timestamp

    /// Versions examined per pass and bucket, so one pass stays bounded; the next pass goes on from the start.
    static let scanLimit = 100_000

    struct Rule {
        var action: String
        var storageClass: String?
        var condition: JSONObject
    }

    /// Runs every bucket's rules once. Returns how many versions were deleted and how many changed class.
    func run() -> (deleted: Int, changed: Int) {
        var deleted = 0
        var changed = 0
        do {
            for bucket in try service.metadata.buckets() {
                let resource = BucketResource(bucket)
                try abortUploads(Self.uploadRules(resource), in: bucket.name)
                let rules = Self.rules(resource)
                guard !rules.isEmpty else { continue }
                let result = try apply(rules, to: bucket.name)
                deleted += result.deleted
                changed += result.changed
            }
        } catch {
            service.logger.warning("lifecycle pass stopped early", metadata: ["silo.error": "\(error)"])
        }
        return (deleted, changed)
    }

    static func rules(_ resource: BucketResource) -> [Rule] {
        (resource.fields["lifecycle"]?.objectValue?["rule"]?.arrayValue ?? []).compactMap { value in
            guard let rule = value.objectValue, let action = rule["action"]?.objectValue,
                let type = action["type"]?.stringValue, type != "AbortIncompleteMultipartUpload"
            else { return nil }
            return Rule(
                action: type, storageClass: action["storageClass"]?.stringValue,
                condition: rule["condition"]?.objectValue ?? JSONObject())
        }
    }

    /// The conditions of the bucket's `AbortIncompleteMultipartUpload` rules.
    static func uploadRules(_ resource: BucketResource) -> [JSONObject] {
        (resource.fields["lifecycle"]?.objectValue?["rule"]?.arrayValue ?? []).compactMap { value in
            guard let rule = value.objectValue,
                rule["action"]?.objectValue?["type"]?.stringValue
                    == "AbortIncompleteMultipartUpload"
            else { return nil }
            return rule["condition"]?.objectValue ?? JSONObject()
        }
    }

    /// Aborts the uploads in progress that a rule's conditions all hold for; returns how many.
    @discardableResult
    func abortUploads(_ conditions: [JSONObject], in bucket: BucketName) throws -> Int {
        guard !conditions.isEmpty else { return 0 }
        let day: Int64 = 86_400 * 1_000_000
        var aborted = 0
        var after: String?
        while true {
            let page = try service.metadata.sessions(
                idPrefix: XMLMultipartIDs.uploadsPrefix(bucket), after: after, limit: 1000)
            for upload in page where upload.state == .active && upload.api == .xmlMultipart {
                let name = upload.name.rawValue
                let applies = conditions.contains { condition in
                    !condition.members.isEmpty
                        && condition.members.allSatisfy { key, value in
                            switch key {
                            case "age":
                                value.int64Value.map { (now.microseconds - upload.created.microseconds) / day >= $0 }
                                    ?? false
                            case "matchesPrefix":
                                (value.arrayValue ?? []).contains { $0.stringValue.map(name.hasPrefix) ?? false }
                            case "matchesSuffix":
                                (value.arrayValue ?? []).contains { $0.stringValue.map(name.hasSuffix) ?? false }
                            default: false
                            }
                        }
                }
                guard applies else { continue }
                do {
                    try service.abortMultipartUpload(upload)
                    aborted += 1
                } catch let error as StorageError where error.code == .notFound {
                    // Completed or aborted since it was listed.
                }
            }
            guard page.count == 1000 else { return aborted }
            after = page.last?.id
        }
    }

    private func apply(_ rules: [Rule], to bucket: BucketName) throws -> (deleted: Int, changed: Int) {
        var deleted = 0
        var changed = 0
        var after: ObjectVersionKey?
        var scanned = 0
        var name: ObjectName?
        var versions: [ObjectRecord] = []
        // Versions come by name, oldest generation first; a name's versions are judged together (numNewerVersions).
        func judge() throws {
            guard !versions.isEmpty else { return }
            let live = try service.object(bucket, versions[0].name, generation: nil)
            for (index, version) in versions.enumerated() {
                let isLive = version.generation == live?.generation
                let newer = versions.count - 1 - index
                // A noncurrent version became noncurrent when the next one was made (or, for a deleted live
                // version, at its last update: Silo keeps no separate time).
                let noncurrentSince =
                    isLive ? nil : (index + 1 < versions.count ? versions[index + 1].timeCreated : version.updated)
                let matching = rules.filter {
                    Self.holds(
                        $0.condition, version, isLive: isLive, newer: newer, noncurrentSince: noncurrentSince, now: now)
                }
                if matching.contains(where: { $0.action == "Delete" }) {
                    do {
                        try service.deleteObject(
                            bucket, version.name, generation: isLive ? nil : version.generation,
                            conditions: Preconditions(ifGenerationMatch: isLive ? version.generation : nil), time: now)
                        deleted += 1
                    } catch let error as StorageError
                        where error.code == .permissionDenied || error.code == .preconditionFailed
                        || error.code == .notFound
                    {
                        // Held or retained (GCS skips those too), or changed since it was read.
                    }
                } else if let target = matching.first(where: { $0.action == "SetStorageClass" })?.storageClass,
                    version.fields.extras.storageClass ?? "STANDARD" != target
                {
                    // A version that changed or went since it was read is left to the next pass.
                    let updated = try? service.metadata.updateObject(
                        bucket, version.name, generation: version.generation,
                        conditions: Preconditions(ifMetagenerationMatch: version.metageneration), at: now
                    ) { $0.extras.storageClass = target }
                    if updated != nil { changed += 1 }
                }
            }
            versions = []
        }
        while scanned < Self.scanLimit {
            let page = try service.metadata.listObjectVersions(bucket, prefix: "", startAfter: after, limit: 1000)
            for version in page {
                if version.name != name {
                    try judge()
                    name = version.name
                }
                versions.append(version)
            }
            scanned += page.count
            guard let last = page.last, page.count == 1000 else { break }
            after = ObjectVersionKey(last)
        }
        try judge()
        return (deleted, changed)
    }

    /// Whether every condition GCS defines for a rule holds for `version` at `now`. Unknown conditions never
    /// reach here (the bucket resource refuses them).
    static func holds(
        _ condition: JSONObject, _ version: ObjectRecord, isLive: Bool, newer: Int, noncurrentSince: Timestamp?,
        now: Timestamp
    ) -> Bool {
        let day: Int64 = 86_400 * 1_000_000
        func days(since time: Timestamp) -> Int64 { (now.microseconds - time.microseconds) / day }
        func date(_ key: String) -> Timestamp? {
            condition[key]?.stringValue.flatMap { Timestamp(rfc3339: $0 + "T00:00:00Z") }
        }
        for (key, value) in condition.members {
            let ok: Bool
            switch key {
            case "age": ok = value.int64Value.map { days(since: version.timeCreated) >= $0 } ?? false
            case "createdBefore": ok = date(key).map { version.timeCreated < $0 } ?? false
            case "customTimeBefore":
                ok = date(key).flatMap { limit in version.fields.customTime.map { $0 < limit } } ?? false
            case "daysSinceCustomTime":
                ok = value.int64Value.flatMap { n in version.fields.customTime.map { days(since: $0) >= n } } ?? false
            case "daysSinceNoncurrentTime":
                ok = value.int64Value.flatMap { n in noncurrentSince.map { days(since: $0) >= n } } ?? false
            case "noncurrentTimeBefore":
                ok = date(key).flatMap { limit in noncurrentSince.map { $0 < limit } } ?? false
            case "isLive": ok = value == .bool(isLive)
            case "numNewerVersions": ok = value.int64Value.map { Int64(newer) >= $0 } ?? false
            case "matchesStorageClass":
                let current = version.fields.extras.storageClass ?? "STANDARD"
                ok = (value.arrayValue ?? []).contains(.string(current))
            case "matchesPrefix":
                ok = (value.arrayValue ?? []).contains { $0.stringValue.map(version.name.rawValue.hasPrefix) ?? false }
            case "matchesSuffix":
                ok = (value.arrayValue ?? []).contains { $0.stringValue.map(version.name.rawValue.hasSuffix) ?? false }
            default: ok = false
            }
            if !ok { return false }
        }
        return true
    }
}
