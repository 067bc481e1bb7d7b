import SiloCore
import SiloServerKit
import SiloWire

/// The JSON shape GCS gives a field of the bucket resource: what ``BucketResource`` refuses on top of each field's
/// own rules — an unknown key inside a field, a value of the wrong type — so that what is stored, and read back,
/// is always GCS's shape. `null` is accepted as an object member (PATCH deletes with it), never as a list item.
package indirect enum BucketFieldShape: Sendable {
    case bool, string
    /// A JSON integer from 0 to 2^31 - 1 (GCS's int32 fields here are all counts).
    case count
    /// An int64: a JSON integer or a string of one (GCS writes int64 values as strings).
    case int64
    /// A calendar date, `YYYY-MM-DD`.
    case date
    case oneOf(Set<String>)
    case list(BucketFieldShape)
    case object([String: BucketFieldShape])

    func check(_ value: JSONValue, _ path: String) throws {
        func bad(_ what: String) -> StorageError {
            StorageError(.invalidArgument, "Invalid argument: \(path.prefix(120)) \(what)")
        }
        switch self {
        case .bool:
            guard case .bool = value else { throw bad("must be true or false") }
        case .string:
            guard value.stringValue != nil else { throw bad("must be a string") }
        case .count:
            guard case .number(let text) = value, let n = Int32(text), n >= 0 else {
                throw bad("must be a non-negative integer")
            }
        case .int64:
            guard value.int64Value != nil else { throw bad("must be an integer") }
        case .date:
            guard let text = value.stringValue, text.utf8.count == 10, Timestamp(rfc3339: text + "T00:00:00Z") != nil
            else { throw bad("must be a date (YYYY-MM-DD)") }
        case .oneOf(let allowed):
            guard let text = value.stringValue, allowed.contains(text) else {
                throw bad("must be one of \(allowed.sorted().joined(separator: ", "))")
            }
        case .list(let item):
            guard let items = value.arrayValue else { throw bad("must be a list") }
            for (index, element) in items.enumerated() {
                guard element != .null else { throw bad("must not hold null") }
                try item.check(element, "\(path)[\(index)]")
            }
        case .object(let members):
            guard let object = value.objectValue else { throw bad("must be an object") }
            for (key, member) in object.members {
                guard let shape = members[key] else {
                    throw StorageError(
                        .invalidArgument, "Invalid argument: unknown field '\(key.prefix(80))' in \(path.prefix(120))")
                }
                if member != .null { try shape.check(member, "\(path).\(key)") }
            }
        }
    }

    /// The value with every `null` object member dropped (what a replaced field keeps).
    static func withoutNulls(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let object):
            var out = JSONObject()
            for (key, member) in object.members where member != .null { out[key] = withoutNulls(member) }
            return .object(out)
        case .array(let items): return .array(items.map(withoutNulls))
        default: return value
        }
    }

    private static let strings = BucketFieldShape.list(.string)
    private static let enforcement = BucketFieldShape.object([
        "restrictionMode": .oneOf(["NotRestricted", "FullyRestricted"]), "effectiveTime": .string,
    ])
    private static let uniformAccess = BucketFieldShape.object(["enabled": .bool, "lockedTime": .string])

    /// Bucket fields whose members GCS defines (the others are checked by ``BucketResource`` alone).
    static let fields: [String: BucketFieldShape] = [
        "customPlacementConfig": .object(["dataLocations": strings]),
        "lifecycle": .object([
            "rule": .list(
                .object([
                    "action": .object(["type": .string, "storageClass": .string]),
                    "condition": .object([
                        "age": .count, "createdBefore": .date, "customTimeBefore": .date, "daysSinceCustomTime": .count,
                        "daysSinceNoncurrentTime": .count, "noncurrentTimeBefore": .date, "isLive": .bool,
                        "numNewerVersions": .count, "matchesStorageClass": strings, "matchesPrefix": strings,
                        "matchesSuffix": strings,
                    ]),
                ]))
        ]),
        "retentionPolicy": .object(["retentionPeriod": .int64, "effectiveTime": .string, "isLocked": .bool]),
        "softDeletePolicy": .object(["retentionDurationSeconds": .int64, "effectiveTime": .string]),
        "iamConfiguration": .object([
            "uniformBucketLevelAccess": uniformAccess, "bucketPolicyOnly": uniformAccess,
            "publicAccessPrevention": .string,
        ]),
        "autoclass": .object([
            "enabled": .bool, "toggleTime": .string, "terminalStorageClass": .string,
            "terminalStorageClassUpdateTime": .string,
        ]),
        "hierarchicalNamespace": .object(["enabled": .bool]),
        "ipFilter": .object([
            "mode": .oneOf(["Enabled", "Disabled"]), "publicNetworkSource": .object(["allowedIpCidrRanges": strings]),
            "vpcNetworkSources": .list(.object(["network": .string, "allowedIpCidrRanges": strings])),
            "allowCrossOrgVpcs": .bool, "allowAllServiceAgentAccess": .bool,
        ]),
        "encryption": .object([
            "defaultKmsKeyName": .string, "googleManagedEncryptionEnforcementConfig": enforcement,
            "customerManagedEncryptionEnforcementConfig": enforcement,
            "customerSuppliedEncryptionEnforcementConfig": enforcement,
        ]),
        "billing": .object(["requesterPays": .bool]),
        "cors": .list(
            .object(["origin": strings, "method": strings, "responseHeader": strings, "maxAgeSeconds": .count])),
        "website": .object(["mainPageSuffix": .string, "notFoundPage": .string]),
        "logging": .object(["logBucket": .string, "logObjectPrefix": .string]),
    ]
}
