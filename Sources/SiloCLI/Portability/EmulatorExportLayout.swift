import Foundation
import SiloWire

/// Finding the storage directory of an export on disk (the format itself is SiloWire's ``EmulatorExportFormat``).
enum EmulatorExportLayout {
    static let rootMetadataFile = EmulatorExportFormat.rootMetadataFile
    static let defaultStoragePath = EmulatorExportFormat.defaultStoragePath

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
}
