import Foundation

/// Small questions about local files.
enum LocalFiles {
    static func size(of path: String) -> Int64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
        switch attributes[.size] {
        case let number as NSNumber: return number.int64Value
        case let value as Int: return Int64(value)
        case let value as UInt64: return Int64(value)
        case let value as Int64: return value
        default: return nil
        }
    }

    static func isDirectory(_ path: String) -> Bool {
        var flag: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &flag) && flag.boolValue
    }
}
