import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

extension XMLRoutes {
    /// `GET`/`PUT ?acl` on a bucket or an object and `?defaultObjectAcl` on a bucket: the ACLs the JSON API keeps
    /// (``GCSAccessControlRoutes/access(_:_:generation:conditions:write:time:edit:)``), as GCS's
    /// `<AccessControlList>`. A PUT replaces the whole list, from its body or from a canned `x-goog-acl`.
    package func accessControl(_ context: RequestContext, _ bucket: BucketName, _ target: ACLTarget)
        -> RequestDisposition
    {
        let routes = GCSAccessControlRoutes(service: service)
        var named: Int64?
        var generation: Int64?
        let conditions: Preconditions
        do {
            if case .object(let name) = target {
                named = try GCSConditions.generation(context.query)
                generation = context.addressed(bucket, name, named: named)
            }
            conditions = try XMLObjectHeaders.conditions(context.headers)
        } catch {
            return .respond(Reply.xmlError(error))
        }
        let changed = { (error: any Error) -> any Error in
            guard case .object(let name) = target else { return error }
            return context.changed(bucket, name, named: named, error)
        }
        switch context.method {
        case "GET", "HEAD":
            return .respond(
                run(bucket) {
                    do {
                        let (entries, record) = try routes.access(
                            bucket, target, generation: generation, conditions: conditions, write: false,
                            time: context.time, edit: { _, _ in })
                        return Reply.xml(200, XMLACL.render(entries, owner: XMLACL.owner(record)))
                    } catch {
                        throw changed(error)
                    }
                })
        case "PUT":
            let canned: String?
            do { canned = try XMLACL.canned(context.headers, target) } catch {
                return .respond(Reply.xmlError(error))
            }
            return .readBody(
                CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.xmlError($0) }) { body in
                    do {
                        let given = canned == nil ? try XMLACL.parse(body, bucketRoles: target.bucketRoles) : nil
                        _ = try routes.access(
                            bucket, target, generation: generation, conditions: conditions, write: true,
                            time: context.time
                        ) { entries, owner in
                            entries = try given ?? XMLACL.expand(canned ?? "", target, owner: owner)
                        }
                        return Reply.empty(200)
                    } catch {
                        return Reply.xmlError(changed(error))
                    }
                })
        default:
            return .respond(Self.methodNotAllowed(context, allowed: "GET, HEAD, PUT"))
        }
    }
}

/// GCS's XML form of an ACL: `<AccessControlList><Owner><ID>…</ID></Owner><Entries><Entry><Scope type="…">…</Scope>
/// <Permission>READ|WRITE|FULL_CONTROL</Permission></Entry>…</Entries></AccessControlList>`, both ways.
///
/// GCS names a project's teams (`project-owners-N` in the JSON API) by group IDs of its own; Silo has none, so a
/// team is the `GroupById` whose ID is the JSON entity itself, and reads back as that entity.
enum XMLACL {
    /// GCS's limit on the entries of one ACL.
    static let maxEntries = 100

    package static func render(_ entries: [ACLEntry], owner: String) -> String {
        var xml = XMLWriter()
        xml.element("AccessControlList") { xml in
            xml.element("Owner") { $0.element("ID", owner) }
            guard !entries.isEmpty else { return xml.empty("Entries") }
            xml.element("Entries") { xml in
                for entry in entries {
                    xml.element("Entry") { xml in
                        scope(entry.entity, into: &xml)
                        xml.element("Permission", permissions.first { $0.json == entry.role }?.xml ?? "READ")
                    }
                }
            }
        }
        return xml.text
    }

    /// Who owns the ACL's resource: the object's uploader when known, else the project's owners.
    package static func owner(_ record: ObjectRecord?) -> String {
        record?.fields.extras.owner ?? "project-owners-\(ProjectACL.projectNumber)"
    }

    private static let permissions: [(xml: String, json: String)] = [
        ("READ", "READER"), ("WRITE", "WRITER"), ("FULL_CONTROL", "OWNER"),
    ]

    private static func scope(_ entity: String, into xml: inout XMLWriter) {
        func named(_ type: String, _ element: String, _ value: Substring) {
            xml.element("Scope", attributes: ["type": type]) { $0.element(element, String(value)) }
        }
        let rest = entity.drop { $0 != "-" }.dropFirst()
        switch entity {
        case "allUsers": xml.empty("Scope", attributes: ["type": "AllUsers"])
        case "allAuthenticatedUsers": xml.empty("Scope", attributes: ["type": "AllAuthenticatedUsers"])
        case _ where entity.hasPrefix("project-"): named("GroupById", "ID", entity[...])
        case _ where entity.hasPrefix("user-"):
            rest.contains("@") ? named("UserByEmail", "EmailAddress", rest) : named("UserById", "ID", rest)
        case _ where entity.hasPrefix("group-"):
            rest.contains("@") ? named("GroupByEmail", "EmailAddress", rest) : named("GroupById", "ID", rest)
        default: named("GroupByDomain", "Domain", rest)
        }
    }

    /// The entries of an `<AccessControlList>` body, each checked as the JSON API checks an entry (entity shape and
    /// length, the roles the target allows); `<Owner>` is the server's to say and is ignored.
    static func parse(_ body: [UInt8], bucketRoles: Bool) throws -> [ACLEntry] {
        let text = String(decoding: body, as: UTF8.self)[...]
        guard let list = XMLText.elements("AccessControlList", in: text).first else {
            throw StorageError(
                .invalidArgument, "The body must be an <AccessControlList> document (or send x-goog-acl)")
        }
        let entries = XMLText.elements("Entry", in: list)
        guard entries.count <= maxEntries else {
            throw StorageError(.invalidArgument, "An ACL holds at most \(maxEntries) entries, not \(entries.count)")
        }
        return try entries.map { entry in
            guard let scope = XMLText.elementsWithAttributes("Scope", in: entry).first,
                let type = scope.attributes["type"]
            else { throw StorageError(.invalidArgument, "Each ACL <Entry> needs a <Scope type=\"…\">") }
            let permission = XMLText.value("Permission", in: entry)?.trimmed ?? ""
            guard let role = permissions.first(where: { $0.xml == permission })?.json else {
                throw StorageError(
                    .invalidArgument, "ACL permission \(permission.prefix(40)) is not READ, WRITE or FULL_CONTROL")
            }
            return try ACLEntry(entity: try entity(type, scope.content), role: role, bucket: bucketRoles)
        }
    }

    private static func entity(_ type: String, _ scope: Substring) throws -> String {
        func value(_ element: String) throws -> String {
            guard let value = XMLText.value(element, in: scope)?.trimmed, !value.isEmpty else {
                throw StorageError(.invalidArgument, "An ACL scope of type \(type.prefix(40)) needs <\(element)>")
            }
            return value
        }
        switch type.lowercased() {
        case "allusers": return "allUsers"
        case "allauthenticatedusers": return "allAuthenticatedUsers"
        case "userbyemail": return "user-" + (try value("EmailAddress"))
        case "userbyid": return "user-" + (try value("ID"))
        case "groupbyemail": return "group-" + (try value("EmailAddress"))
        case "groupbydomain": return "domain-" + (try value("Domain"))
        case "groupbyid":
            let id = try value("ID")
            let team = ["owners", "editors", "viewers"].contains { id.hasPrefix("project-\($0)-") }
            return team ? id : "group-" + id
        default:
            throw StorageError(.invalidArgument, "ACL scope type \(type.prefix(40)) is not one GCS knows")
        }
    }

    /// `x-goog-acl` on a PUT `?acl`: the canned ACL's name as the JSON API's predefined ACLs spell it (`public-read`
    /// is `publicRead`), checked before the body is read; nil without the header.
    static func canned(_ headers: HTTPHeaders, _ target: ACLTarget) throws -> String? {
        guard case .bucket = target else { return try XMLObjectHeaders.predefinedACL(headers) }
        guard let canned = headers["x-goog-acl"] else { return nil }
        guard let name = bucketCanned[canned.lowercased()] else {
            throw StorageError(
                .invalidArgument,
                "x-goog-acl \(canned.prefix(60)) is not a canned ACL for buckets: "
                    + bucketCanned.keys.sorted().joined(separator: ", "))
        }
        return name
    }

    /// The entries of a canned ACL, as the JSON API's `predefinedAcl` expands it (an object's owner keeps OWNER).
    static func expand(_ name: String, _ target: ACLTarget, owner: String?) throws -> [ACLEntry] {
        guard case .bucket = target else { return try ObjectResource.predefined(name, owner: owner) }
        return try GCSBucketRoutes.predefinedACL(name)
    }

    private static let bucketCanned = [
        "private": "private", "project-private": "projectPrivate", "public-read": "publicRead",
        "public-read-write": "publicReadWrite", "authenticated-read": "authenticatedRead",
    ]
}

extension String {
    fileprivate var trimmed: String {
        var text = self[...]
        while text.first?.isWhitespace == true { text = text.dropFirst() }
        while text.last?.isWhitespace == true { text = text.dropLast() }
        return String(text)
    }
}
