import SiloCore

/// The Firebase emulator's export format, shared by `silo serve --export-on-exit` (SiloCLI's exporter, over HTTP),
/// `POST /internal/export` (the server, from its stores) and the importer, so all three read and write one layout:
///
/// ```
/// DIR/firebase-export-metadata.json      {"version": …, "storage": {"version": …, "path": "storage_export"}}
/// DIR/storage_export/buckets.json        {"buckets": [{"id": "<bucket>"}]}
/// DIR/storage_export/blobs/<diskName>    raw bytes
/// DIR/storage_export/metadata/<diskName>.json
/// ```
///
/// `POST /internal/export` writes the storage directory only (`storage_export/` above): firebase-tools' hub names
/// that directory and writes `firebase-export-metadata.json` itself.
public enum EmulatorExportFormat {
    public static let rootMetadataFile = "firebase-export-metadata.json"
    public static let defaultStoragePath = "storage_export"
    public static let bucketsFile = "buckets.json"
    public static let blobsDirectory = "blobs"
    public static let metadataDirectory = "metadata"
    public static let version = "silo-1"

    /// `buckets.json`'s content.
    public static func bucketList(_ buckets: [String]) -> JSONValue {
        .object(["buckets": .array(buckets.map { .object(["id": .string($0)]) })])
    }

    /// v0 metadata JSON (strings for numbers, base64 crc32c, comma-separated tokens) → the emulator's file JSON.
    public static func emulatorMetadata(fromV0 v0: JSONObject) -> JSONObject {
        var out = JSONObject()
        func string(_ key: String) -> String? { v0[key]?.stringValue }
        func number(_ key: String) -> JSONValue? { v0[key]?.int64Value.map { .number($0) } }
        out["name"] = v0["name"]
        out["bucket"] = v0["bucket"]
        out["generation"] = number("generation")
        out["metageneration"] = number("metageneration")
        out["contentType"] = v0["contentType"]
        out["storageClass"] = .string(string("storageClass") ?? "STANDARD")
        out["size"] = number("size")
        out["md5Hash"] = v0["md5Hash"]
        if let crc = string("crc32c") { out["crc32c"] = .string(decimalCRC32C(crc)) }
        out["etag"] = v0["etag"]
        out["timeCreated"] = v0["timeCreated"]
        out["updated"] = v0["updated"]
        let tokens = (string("downloadTokens") ?? "").split(separator: ",").map { JSONValue.string(String($0)) }
        out["downloadTokens"] = .array(tokens)
        if let custom = v0["metadata"]?.objectValue, !custom.members.isEmpty { out["customMetadata"] = .object(custom) }
        for key in ["contentDisposition", "contentEncoding", "cacheControl", "contentLanguage", "customTime"] {
            if let value = v0[key], value != .null { out[key] = value }
        }
        return out
    }

    /// Base64 of a big-endian CRC32C (production's form) as the decimal string the emulator writes; decimal input is
    /// kept as it is.
    public static func decimalCRC32C(_ text: String) -> String {
        if !text.isEmpty, text.allSatisfy(\.isNumber) { return text }
        guard let value = Checksums.crc32c(fromBase64: text) else { return text }
        return String(value)
    }

    /// The download tokens of an emulator metadata file (an array; a comma-separated string is accepted too).
    public static func downloadTokens(_ metadata: JSONObject) -> [String] {
        switch metadata["downloadTokens"] {
        case .array(let values)?: return values.compactMap(\.stringValue).filter { !$0.isEmpty }
        case .string(let text)?: return text.split(separator: ",").map(String.init)
        default: return []
        }
    }
}
