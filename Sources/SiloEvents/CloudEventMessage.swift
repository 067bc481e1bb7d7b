public import SiloCore
import SiloHashing
import SiloWire

/// A storage event as one CloudEvents 1.0 HTTP request in binary content mode: the attributes in `ce-*` headers,
/// the data (the GCS object resource, what Cloud Functions receive as `StorageObjectData`) as the JSON body.
public struct CloudEventMessage: Sendable, Equatable {
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    /// The header that carries `sha256=<hex HMAC-SHA256 of the body under the configured secret>`.
    public static let signatureHeader = "X-Silo-Signature"

    /// `base` is the host the data's `selfLink` and `mediaLink` name (scheme://host[:port]).
    public init(_ outbox: OutboxEvent, base: String, secret: [UInt8]) {
        let event = outbox.event
        let record = event.object
        var extra = JSONObject()
        // GCS shows when a version stopped being live; the archive event is where that happens.
        if event.kind == .archive { extra["timeDeleted"] = .string(event.time.rfc3339) }
        body = GCSJSON.object(record, base: base, extra: extra).serialized()
        let signature = HMACSHA256.authenticationCode(key: secret, message: body)
        headers = [
            ("Content-Type", "application/json"),
            ("ce-specversion", "1.0"),
            ("ce-id", outbox.id),
            ("ce-source", "//storage.googleapis.com/projects/_/buckets/" + Self.headerValue(record.bucket.rawValue)),
            ("ce-type", Self.type(event.kind)),
            ("ce-subject", "objects/" + Self.headerValue(record.name.rawValue)),
            ("ce-time", event.time.rfc3339Precise),
            ("ce-bucket", Self.headerValue(record.bucket.rawValue)),
            (Self.signatureHeader, "sha256=" + Base16.encode(signature)),
        ]
    }

    public static func == (a: CloudEventMessage, b: CloudEventMessage) -> Bool {
        a.body == b.body && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The CloudEvents type Eventarc and Cloud Functions (2nd gen) use for each kind.
    public static func type(_ kind: StorageEvent.Kind) -> String {
        let verb =
            switch kind {
            case .finalize: "finalized"
            case .delete: "deleted"
            case .archive: "archived"
            case .metadataUpdate: "metadataUpdated"
            }
        return "google.cloud.storage.object.v1." + verb
    }

    /// CloudEvents' HTTP binding: header values are percent-encoded outside printable ASCII, and for space, `"`
    /// and `%`, so any object name fits in a header (and none can inject a line).
    static func headerValue(_ text: String) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if byte > 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x25 {
                out.append(byte)
            } else {
                out += [0x25, digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
