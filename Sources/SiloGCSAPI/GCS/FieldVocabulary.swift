import SiloCore
import SiloServerKit
import SiloWire

/// The member names a `fields` selector may use: every property of the JSON API's schemas in this server's OpenAPI
/// document (docs/openapi.json), which schemathesis holds every answer to, so a name Silo renders is a name it
/// accepts; and the members of GCS's resources that Silo never renders, which clients still select (gsutil names
/// `kmsKeyName`, `timeDeleted` and `satisfiesPZS` in its selectors). Below a map (`metadata`, `labels`,
/// `contexts/custom`) any key is a name.
///
/// GCS refuses a name its resource lacks; Silo checks the selector before the handler runs, when the resource the
/// answer will be is not known yet, so it refuses a name no JSON API resource has, and a name of another resource
/// selects nothing (docs/gcs-api.md, "Partial responses").
struct FieldVocabulary {
    let names: Set<String>
    /// Members whose own members are keys chosen by the client.
    let maps: Set<String>

    package static let gcs = FieldVocabulary(openAPI: OpenAPIDocument.bytes, unrendered: unrendered)

    /// GCS resource members Silo has no value for: ACL entries' `entityId`, an object's `timeDeleted`,
    /// `timeFinalized` and `restoreToken`, a bucket's `satisfiesPZS`/`satisfiesPZI`, a partial rewrite's
    /// `rewriteToken`, a listing's `unreachable`, and the members of notification configs and watch channels, which
    /// Silo does not serve.
    static let unrendered: Set<String> = [
        "entityId", "timeDeleted", "timeFinalized", "restoreToken", "satisfiesPZS", "satisfiesPZI", "rewriteToken",
        "unreachable", "topic", "event_types", "custom_attributes", "payload_format", "object_name_prefix", "address",
        "expiration", "params", "payload", "resourceUri", "token",
    ]

    init(openAPI: [UInt8], unrendered: Set<String> = []) {
        var names = unrendered
        var maps: Set<String> = []
        func walk(_ value: JSONValue) {
            switch value {
            case .object(let object):
                if let properties = object["properties"]?.objectValue {
                    for (name, schema) in properties.members {
                        names.insert(name)
                        if let additional = schema.objectValue?["additionalProperties"], additional != .bool(false) {
                            maps.insert(name)
                        }
                    }
                }
                for (_, member) in object.members { walk(member) }
            case .array(let elements):
                elements.forEach(walk)
            case .null, .bool, .number, .string:
                break
            }
        }
        let schemas = (try? JSONValue.parse(openAPI))?.objectValue?["components"]?.objectValue?["schemas"]?.objectValue
        for (name, schema) in schemas?.members ?? [] where name.hasPrefix("GCS") { walk(schema) }
        self.names = names
        self.maps = maps
    }

    /// Throws the selector's refusal when it names a member no resource has.
    func check(_ selection: FieldSelection) throws {
        try selection.forEachName { name, parents in
            if name == "*" || names.contains(name) { return }
            if let parent = parents.last, maps.contains(parent) { return }
            throw StorageError(.invalidArgument, "Invalid field selection \(name.prefix(200))")
        }
    }
}
