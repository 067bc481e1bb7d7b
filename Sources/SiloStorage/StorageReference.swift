import Foundation

/// A location in a bucket, like Firebase's `StorageReference`: navigation here, operations in extensions.
public final class StorageReference: Sendable, Hashable, CustomStringConvertible {
    public let storage: Storage
    let path: StoragePath

    init(storage: Storage, path: StoragePath) {
        self.storage = storage
        self.path = path
    }

    /// The bucket (`bucket` in `gs://bucket/a/b.txt`).
    public var bucket: String { path.bucket }
    /// The object path (`a/b.txt`); "" at the root.
    public var fullPath: String { path.object }
    /// The last path component (`b.txt`); "" at the root.
    public var name: String { path.name }

    public func root() -> StorageReference { StorageReference(storage: storage, path: path.root()) }

    /// nil at the root.
    public func parent() -> StorageReference? { path.parent().map { StorageReference(storage: storage, path: $0) } }

    /// The reference `path` below this one; slashes are canonicalised (`"/a//b/"` → `a/b`).
    public func child(_ path: String) -> StorageReference {
        StorageReference(storage: storage, path: self.path.child(path))
    }

    /// `gs://<bucket>/<fullPath>`.
    public var description: String { path.gsURI }

    public func copy() -> StorageReference { StorageReference(storage: storage, path: path) }

    public static func == (a: StorageReference, b: StorageReference) -> Bool {
        a.storage === b.storage && a.path == b.path
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(storage))
        hasher.combine(path)
    }

    /// Firebase's `NSObject` equality, spelled as it is there: same `Storage`, bucket and path.
    public func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? StorageReference else { return false }
        return self == other
    }

    /// Firebase's `NSObject` hash, consistent with `isEqual(_:)`.
    public var hash: Int { hashValue }

    /// Operations other than list need an object; Firebase traps or sends nonsense for the root.
    func requireObject() throws(StorageError) {
        if path.isRoot {
            throw .invalidArgument(
                message:
                    "The operation is not allowed on the root reference \(description); use child(_:) to name an object."
            )
        }
    }
}

/// One page of a listing.
public final class StorageListResult: Sendable {
    /// The "folders" directly below the listed reference.
    public let prefixes: [StorageReference]
    /// The objects directly below the listed reference.
    public let items: [StorageReference]
    /// Pass to `list(maxResults:pageToken:)` for the next page; nil on the last page.
    public let pageToken: String?

    init(prefixes: [StorageReference], items: [StorageReference], pageToken: String?) {
        self.prefixes = prefixes
        self.items = items
        self.pageToken = pageToken
    }

    public func copy() -> StorageListResult {
        StorageListResult(prefixes: prefixes, items: items, pageToken: pageToken)
    }
}

/// Observer handles, as Firebase's Swift API spells them.
public typealias StorageHandle = String
