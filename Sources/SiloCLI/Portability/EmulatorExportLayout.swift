import Foundation
import SiloWire

/// The Firebase emulator's export layout:
///
/// ```
/// DIR/firebase-export-metadata.json      {"version": …, "storage": {"version": …, "path": "storage_export"}}
/// DIR/storage_export/buckets.json        {"buckets": [{"id": "<bucket>"}]}
/// DIR/storage_export/blobs/<diskName>    raw bytes
/// DIR/storage_export/metadata/<diskName>.json
/// ```
enum EmulatorExportLayout {
    static let rootMetadataFile = "firebase-export-metadata.json"
    static let defaultStoragePath = "storage_export"
    static let version = "silo-1"

    /// The storage directory of an export: the one `firebase-export-metadata.json` names, else `storage_export`;
    /// a directory that itself holds `metadata/` is taken as the storage directory.
    static func storageDirectory(of root: String) throws -> String {
        let fm = FileManager.default
        guard LocalFiles.isDirectory(root) else { throw CommandFailure("no such directory: \(root)") }
        if let data = fm.contents(atPath: root + "/" + rootMetadataFile) {
            guard let json = try? JSONValue.parse(Array(data)).objectValue else {
                throw CommandFailure("\(root)/\(rootMetadataFile) is not valid JSON")
            }
            if let path = json["storage"]?.objectValue?["path"]?.stringValue { return root + "/" + path }
        }
        if LocalFiles.isDirectory(root + "/" + defaultStoragePath) { return root + "/" + defaultStoragePath }
        if LocalFiles.isDirectory(root + "/metadata") { return root }
        throw CommandFailure(
            "\(root) holds no storage export (no \(rootMetadataFile), \(defaultStoragePath)/ or metadata/)")
    }

    /// v0 metadata JSON (strings for numbers, base64 crc32c, comma-separated tokens) → the emulator's file JSON.
    static func emulatorMetadata(fromV0 v0: JSONObject) -> JSONObject {
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
    static func decimalCRC32C(_ text: String) -> String {
        if !text.isEmpty, text.allSatisfy(\.isNumber) { return text }
        guard let data = Data(base64Encoded: text), data.count == 4 else { return text }
        return String(data.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }

    /// The download tokens of an emulator metadata file (an array; a comma-separated string is accepted too).
    static func downloadTokens(_ metadata: JSONObject) -> [String] {
        switch metadata["downloadTokens"] {
        case .array(let values)?: return values.compactMap(\.stringValue).filter { !$0.isEmpty }
        case .string(let text)?: return text.split(separator: ",").map(String.init)
        default: return []
        }
    }
}
