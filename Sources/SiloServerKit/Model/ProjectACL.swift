package import SiloCore
package import SiloWire

/// The ACLs GCS gives when none is named, and the stored ACL lists access reads.
package enum ProjectACL {
    /// The project every ACL and IAM entity names: Silo has one (`projectNumber` in bucket resources).
    package static let projectNumber = "000000000000"

    /// What a new object gets when its metadata names no ACL: the bucket's `defaultObjectAcl`, else GCS's default
    /// for a project's bucket.
    package static func defaultACL(_ bucket: BucketResource?, owner: String?) -> [ACLEntry] {
        if let stored = bucket?.fields["defaultObjectAcl"]?.arrayValue {
            return stored.compactMap { try? ACLEntry(json: $0, bucket: false) }
        }
        var entries = [
            ACLEntry(entity: "project-owners-\(projectNumber)", role: "OWNER"),
            ACLEntry(entity: "project-editors-\(projectNumber)", role: "OWNER"),
            ACLEntry(entity: "project-viewers-\(projectNumber)", role: "READER"),
        ]
        if let owner { entries.append(ACLEntry(entity: owner, role: "OWNER")) }
        return entries
    }

    package static func entries(_ json: JSONValue?) -> [ACLEntry]? {
        json?.arrayValue.map { $0.compactMap { try? ACLEntry(json: $0, bucket: true) } }
    }

    /// A new GCS bucket's ACL.
    package static let bucketDefault = [
        ACLEntry(entity: "project-owners-\(ProjectACL.projectNumber)", role: "OWNER"),
        ACLEntry(entity: "project-editors-\(ProjectACL.projectNumber)", role: "OWNER"),
        ACLEntry(entity: "project-viewers-\(ProjectACL.projectNumber)", role: "READER"),
    ]

    package static func storedJSON(_ entry: ACLEntry) -> JSONValue {
        .object(["entity": .string(entry.entity), "role": .string(entry.role)])
    }

    package static func bucketJSON(_ entry: ACLEntry, bucket: BucketName, kind: String) -> JSONValue {
        var o: JSONObject = [
            "kind": .string(kind), "id": .string("\(bucket.rawValue)/\(entry.entity)"),
            "bucket": .string(bucket.rawValue), "entity": .string(entry.entity), "role": .string(entry.role),
            "etag": .string("CAE="),
        ]
        ACLEntryDetails.add(entry, to: &o)
        return .object(o)
    }
}

/// The fields GCS derives from an ACL entity (`email`, `domain`, `projectTeam`).
package enum ACLEntryDetails {
    package static func add(_ entry: ACLEntry, to o: inout JSONObject) {
        let entity = entry.entity
        if entity.hasPrefix("user-") || entity.hasPrefix("group-") {
            let email = String(entity.drop { $0 != "-" }.dropFirst())
            if email.contains("@") { o["email"] = .string(email) }
        } else if entity.hasPrefix("domain-") {
            o["domain"] = .string(String(entity.dropFirst("domain-".count)))
        }
        for team in ["owners", "editors", "viewers"] where entity.hasPrefix("project-\(team)-") {
            o["projectTeam"] = .object([
                "projectNumber": .string(String(entity.dropFirst("project-\(team)-".count))), "team": .string(team),
            ])
        }
    }
}
