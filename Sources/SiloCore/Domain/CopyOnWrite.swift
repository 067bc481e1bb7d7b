/// A value type's fields in one heap storage shared by its copies and copied on the first write to a shared one, so
/// that copying the value is one retain however many references its fields hold. For the values every request
/// copies several times (``ObjectRecord``, the HTTP request head and response): field by field, such a copy was a
/// dozen to twenty retains and releases (callgrind, `bench/instructions.sh get`).
///
/// The owner exposes each field through `values`: `_read { yield fields.values.x }` and
/// `_modify { yield &fields.values.x }`.
public struct CopyOnWrite<Values> {
    private final class Storage {
        /// Unchecked: the owning value's accesses are checked statically, and a storage two values share is never
        /// written (``CopyOnWrite/values``' `_modify` copies it first), so the dynamic check (a thread-local access
        /// set, about 40 instructions per field read) could find nothing.
        @exclusivity(unchecked) var values: Values
        init(_ values: Values) { self.values = values }
    }

    private var storage: Storage

    public init(_ values: Values) { storage = Storage(values) }

    public var values: Values {
        _read { yield storage.values }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.values) }
            yield &storage.values
        }
    }

    /// Whether both share one storage (then their values are equal without comparing them).
    public func sharesStorage(with other: CopyOnWrite<Values>) -> Bool { storage === other.storage }
}

/// `@unchecked`: the storage is written only while uniquely referenced (see `values`), so values that two copies or
/// two threads share are only ever read.
extension CopyOnWrite: @unchecked Sendable where Values: Sendable {}
