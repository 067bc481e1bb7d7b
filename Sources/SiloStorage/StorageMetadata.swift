public import Foundation
import Synchronization

/// An object's metadata, like Firebase's `StorageMetadata`. The six writable properties can be set by the caller;
/// the others come from the server. It is `Sendable`: its state sits behind a mutex.
public final class StorageMetadata: Sendable, Hashable, CustomStringConvertible {
    struct Fields: Sendable, Equatable, Hashable {
        var bucket = ""
        var cacheControl: String?
        var contentDisposition: String?
        var contentEncoding: String?
        var contentLanguage: String?
        var contentType: String?
        var md5Hash: String?
        var generation: Int64 = 0
        var metageneration: Int64 = 0
        var customMetadata: [String: String]?
        var path: String?
        var size: Int64 = 0
        var timeCreated: Date?
        var updated: Date?
        var downloadTokens: String?
        var isFile = false
    }

    struct State: Sendable {
        var fields: Fields
        /// What the object was made from: the base of the `updateMetadata` diff.
        var baseline: Fields
        /// Writable keys the caller assigned since then (assigning nil asks the server to delete the field).
        var assigned: Set<String> = []
    }

    let state: Mutex<State>

    /// Empty metadata, for uploads and updates.
    public convenience init() { self.init(fields: Fields()) }

    init(fields: Fields) { state = Mutex(State(fields: fields, baseline: fields)) }

    /// Metadata from a dictionary in the Firebase/GCS JSON shape (`"metadata"` holds the custom map; numbers may be
    /// numbers or decimal strings; dates are RFC 3339).
    public convenience init(dictionary: [String: AnyHashable]) {
        self.init(fields: Fields(dictionary: dictionary))
    }

    var fields: Fields { state.withLock { $0.fields } }

    private func read<T>(_ key: KeyPath<Fields, T>) -> T { fields[keyPath: key] }
    private func set(_ key: WritableKeyPath<Fields, String?>, _ name: String, _ value: String?) {
        state.withLock {
            $0.fields[keyPath: key] = value
            $0.assigned.insert(name)
        }
    }

    /// The bucket; "" when absent.
    public var bucket: String { read(\.bucket) }
    public var cacheControl: String? {
        get { read(\.cacheControl) }
        set { set(\.cacheControl, "cacheControl", newValue) }
    }
    public var contentDisposition: String? {
        get { read(\.contentDisposition) }
        set { set(\.contentDisposition, "contentDisposition", newValue) }
    }
    public var contentEncoding: String? {
        get { read(\.contentEncoding) }
        set { set(\.contentEncoding, "contentEncoding", newValue) }
    }
    public var contentLanguage: String? {
        get { read(\.contentLanguage) }
        set { set(\.contentLanguage, "contentLanguage", newValue) }
    }
    public var contentType: String? {
        get { read(\.contentType) }
        set { set(\.contentType, "contentType", newValue) }
    }
    /// Custom key/value pairs (JSON key `metadata`).
    public var customMetadata: [String: String]? {
        get { read(\.customMetadata) }
        set {
            state.withLock {
                $0.fields.customMetadata = newValue
                $0.assigned.insert("metadata")
            }
        }
    }
    /// Base64 MD5 of the content.
    public var md5Hash: String? { read(\.md5Hash) }
    public var generation: Int64 { read(\.generation) }
    public var metageneration: Int64 { read(\.metageneration) }
    /// Last path component of the object name.
    public internal(set) var name: String? {
        get { read(\.path).map { $0.split(separator: "/").last.map(String.init) ?? "" } }
        set { state.withLock { $0.fields.path = newValue } }
    }
    /// The full object name.
    public internal(set) var path: String? {
        get { read(\.path) }
        set { state.withLock { $0.fields.path = newValue } }
    }
    public var size: Int64 { read(\.size) }
    public var timeCreated: Date? { read(\.timeCreated) }
    public var updated: Date? { read(\.updated) }
    /// True for metadata the server returned for an object (upload, getMetadata, updateMetadata).
    public var isFile: Bool { read(\.isFile) }
    /// Never true (Firebase never sets it either).
    public var isFolder: Bool { false }

    /// An equal, distinct copy that keeps the diff baseline.
    public func copy() -> StorageMetadata {
        let s = state.withLock { $0 }
        let made = StorageMetadata(fields: s.fields)
        made.state.withLock { $0 = s }
        return made
    }

    public static func == (a: StorageMetadata, b: StorageMetadata) -> Bool {
        a === b || a.dictionaryFields == b.dictionaryFields
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(dictionaryFields) }

    /// Firebase's `NSObject` equality, spelled as it is there: equal dictionary representations.
    public func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? StorageMetadata else { return false }
        return self == other
    }

    /// Firebase's `NSObject` hash, consistent with `isEqual(_:)`.
    public var hash: Int { hashValue }

    /// Equality ignores what a dictionary cannot hold (`isFile`, download tokens), as Firebase's does.
    private var dictionaryFields: Fields {
        var f = fields
        f.isFile = false
        f.downloadTokens = nil
        return f
    }

    public var description: String {
        let d = dictionaryRepresentation()
        return "StorageMetadata(" + d.keys.sorted().map { "\($0): \(d[$0]!)" }.joined(separator: ", ") + ")"
    }
}
