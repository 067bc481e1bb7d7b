import Foundation
import SiloStorage
import SiloWire

/// Renders object metadata for people and as JSON.
enum MetadataFormatting {
    static func timestamp(_ date: Date?) -> String {
        guard let date else { return "-" }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// The metadata as a JSON object (the v0 field names, numbers as numbers).
    static func json(_ metadata: StorageMetadata, address: ObjectAddress) -> JSONValue {
        var object: JSONObject = [
            "url": .string("\(address)"),
            "bucket": .string(metadata.bucket),
            "name": .string(metadata.path ?? address.path),
            "size": .number(metadata.size),
            "generation": .number(metadata.generation),
            "metageneration": .number(metadata.metageneration),
            "timeCreated": .string(timestamp(metadata.timeCreated)),
            "updated": .string(timestamp(metadata.updated)),
        ]
        let optional: [(String, String?)] = [
            ("contentType", metadata.contentType), ("md5Hash", metadata.md5Hash),
            ("cacheControl", metadata.cacheControl), ("contentDisposition", metadata.contentDisposition),
            ("contentEncoding", metadata.contentEncoding), ("contentLanguage", metadata.contentLanguage),
        ]
        for (key, value) in optional { if let value { object[key] = .string(value) } }
        if let custom = metadata.customMetadata, !custom.isEmpty {
            var map = JSONObject()
            for (key, value) in custom.sorted(by: { $0.key < $1.key }) { map[key] = .string(value) }
            object["metadata"] = .object(map)
        }
        return .object(object)
    }

    /// `stat`'s human form: one `Field: value` per line.
    static func text(_ metadata: StorageMetadata, address: ObjectAddress) -> String {
        var rows: [(String, String)] = [
            ("Size", "\(metadata.size)"),
            ("Content-Type", metadata.contentType ?? "-"),
            ("Created", timestamp(metadata.timeCreated)),
            ("Updated", timestamp(metadata.updated)),
            ("Generation", "\(metadata.generation)"),
            ("Metageneration", "\(metadata.metageneration)"),
            ("MD5", metadata.md5Hash ?? "-"),
        ]
        let optional: [(String, String?)] = [
            ("Cache-Control", metadata.cacheControl), ("Content-Disposition", metadata.contentDisposition),
            ("Content-Encoding", metadata.contentEncoding), ("Content-Language", metadata.contentLanguage),
        ]
        for (key, value) in optional { if let value { rows.append((key, value)) } }
        for (key, value) in (metadata.customMetadata ?? [:]).sorted(by: { $0.key < $1.key }) {
            rows.append(("Metadata \(key)", value))
        }
        var text = "\(address)\n"
        for (key, value) in rows {
            text += "    " + (key + ":").padding(toLength: 22, withPad: " ", startingAt: 0) + value + "\n"
        }
        return text
    }
}
