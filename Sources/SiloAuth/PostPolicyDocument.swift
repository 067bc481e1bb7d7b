public import SiloCore
import SiloWire

/// The policy document of a V4 POST policy form (`generate_signed_post_policy_v4`): base64 JSON with an
/// `expiration` and `conditions`, each of them
///
/// - `{"field": "value"}` or `["eq", "$field", "value"]`: the form's field is exactly `value`;
/// - `["starts-with", "$field", "prefix"]`: it starts with `prefix` (`""` allows any value, or none);
/// - `["content-length-range", MIN, MAX]`: the file is MIN to MAX bytes (checked as it streams, by the caller).
///
/// Field names compare without case; `bucket` is the bucket the form was posted to. Every field the form sends must
/// be named by a condition, except `policy`, `x-goog-signature`, `file` and `x-ignore-*` fields. The signature is
/// ``ServiceAccountAuthority/signer(ofPolicy:field:at:)``'s to check.
public struct PostPolicyDocument: Sendable {
    public enum Condition: Sendable, Equatable {
        case equals(field: String, value: String)
        case startsWith(field: String, prefix: String)
        case contentLength(ClosedRange<Int64>)
    }

    public let expiration: Timestamp
    public let conditions: [Condition]

    public static let maxPolicyBytes = 64 << 10
    public static let maxConditions = 256
    /// Fields no condition needs to name.
    static let exempt: Set<String> = ["policy", "x-goog-signature", "file"]

    /// Decodes and parses `policy` (the form's `policy` field). Throws `invalidClaims` for a malformed document.
    public init(base64 policy: String) throws(AuthError) {
        func bad(_ why: String) -> AuthError {
            var error = AuthError(.invalidClaims, "the policy document \(why)")
            error.signedRequest = SignedRequestDiagnosis(parameter: "policy")
            return error
        }
        guard policy.utf8.count <= Self.maxPolicyBytes, let bytes = Base64.decode(policy),
            let document = try? JSONValue.parse(bytes).objectValue
        else { throw bad("is not base64-encoded JSON of at most \(Self.maxPolicyBytes) bytes") }
        guard let text = document["expiration"]?.stringValue, let expiration = Timestamp(rfc3339: text) else {
            throw bad("has no RFC 3339 'expiration'")
        }
        guard let list = document["conditions"]?.arrayValue, list.count <= Self.maxConditions else {
            throw bad("has no list of at most \(Self.maxConditions) 'conditions'")
        }
        var conditions: [Condition] = []
        for item in list {
            if let object = item.objectValue {
                guard object.members.count == 1, let (name, value) = object.members.first.map({ ($0.key, $0.value) }),
                    let string = value.stringValue
                else { throw bad("has an exact-match condition that is not one field and a string") }
                conditions.append(.equals(field: name.lowercased(), value: string))
                continue
            }
            guard let array = item.arrayValue, let operation = array.first?.stringValue?.lowercased() else {
                throw bad("has a condition that is neither an object nor a list")
            }
            switch operation {
            case "eq", "starts-with":
                guard array.count == 3, let field = array[1].stringValue, field.hasPrefix("$"),
                    let value = array[2].stringValue
                else { throw bad("has a '\(operation)' condition that is not [op, \"$field\", \"value\"]") }
                let name = String(field.dropFirst()).lowercased()
                conditions.append(
                    operation == "eq" ? .equals(field: name, value: value) : .startsWith(field: name, prefix: value))
            case "content-length-range":
                guard array.count == 3, let low = Self.integer(array[1]), let high = Self.integer(array[2]), low >= 0,
                    low <= high
                else { throw bad("has a content-length-range that is not [op, MIN, MAX] with 0 <= MIN <= MAX") }
                conditions.append(.contentLength(low...high))
            default:
                throw bad("has an unknown condition \(TokenVerifier.printable(operation))")
            }
        }
        self.expiration = expiration
        self.conditions = conditions
    }

    /// Numbers, or numbers written as strings (both appear in the wild).
    private static func integer(_ value: JSONValue) -> Int64? {
        value.int64Value ?? value.stringValue.flatMap { Int64($0) }
    }

    /// The file sizes every `content-length-range` condition allows, nil when none bounds it. Conditions that do
    /// not overlap leave `min > max`: no size passes.
    public var contentLengthRange: (min: Int64, max: Int64)? {
        var range: (min: Int64, max: Int64)?
        for case .contentLength(let bounds) in conditions {
            range = (
                max(range?.min ?? bounds.lowerBound, bounds.lowerBound),
                min(range?.max ?? bounds.upperBound, bounds.upperBound)
            )
        }
        return range
    }

    /// Checks the expiration at `now`, every field condition against `fields` (names lowercased; `bucket` added by
    /// the caller), and that each field is named by some condition.
    public func check(fields: [String: String], at now: Timestamp) throws(AuthError) {
        guard now < expiration else {
            throw AuthError(.expired, "the policy expired at \(expiration.rfc3339)")
        }
        func failed(_ why: String, _ field: String) -> AuthError {
            var error = AuthError(.invalidClaims, why)
            error.signedRequest = SignedRequestDiagnosis(parameter: field)
            return error
        }
        var named: Set<String> = ["bucket"]
        for condition in conditions {
            switch condition {
            case .equals(let field, let value):
                named.insert(field)
                guard (fields[field] ?? "") == value else {
                    throw failed("the form's '\(field)' does not equal what the policy requires", field)
                }
            case .startsWith(let field, let prefix):
                named.insert(field)
                guard (fields[field] ?? "").hasPrefix(prefix) else {
                    throw failed("the form's '\(field)' does not start with what the policy requires", field)
                }
            case .contentLength:
                continue
            }
        }
        for field in fields.keys.sorted()
        where !named.contains(field) && !Self.exempt.contains(field) && !field.hasPrefix("x-ignore-") {
            throw failed("the policy names no condition for the form's field '\(field)'", field)
        }
    }
}
