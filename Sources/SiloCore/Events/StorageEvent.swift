/// A change to an object that storage events report (GCS's Pub/Sub notification types, the CloudEvents types
/// `google.cloud.storage.object.v1.<kind>`): written to the store's outbox in the transaction that makes the change,
/// so an event exists exactly when its change committed.
public struct StorageEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable, Codable {
        /// A new generation became live (upload, copy, compose, rewrite, move's destination, restore).
        case finalize
        /// A version left for good or into soft delete: a delete outside versioning, a noncurrent version deleted, or
        /// the live version an overwrite replaced in a bucket without versioning.
        case delete
        /// A live version became noncurrent (versioned bucket: deleted or overwritten).
        case archive
        /// The metadata of an existing version changed (metageneration moved on).
        case metadataUpdate
    }

    public var kind: Kind
    /// The version as it was after the change (for `delete` and `archive`, as it was when it left).
    public var object: ObjectRecord
    /// When the change committed: the transaction's time.
    public var time: Timestamp

    public init(kind: Kind, object: ObjectRecord, time: Timestamp) {
        self.kind = kind
        self.object = object
        self.time = time
    }
}

/// An event in a store's outbox, as a delivery worker claims it.
public struct OutboxEvent: Sendable, Equatable {
    /// Assigned by the store when the event is written, never reused: the event's stable id (CloudEvents `id`), the
    /// same in every delivery attempt, before and after a restart, whichever node sends it.
    public var sequence: Int64
    public var event: StorageEvent
    /// Failed deliveries so far.
    public var attempts: Int

    public init(sequence: Int64, event: StorageEvent, attempts: Int) {
        self.sequence = sequence
        self.event = event
        self.attempts = attempts
    }

    public var id: String { String(sequence) }
}

/// How far delivery is behind: what `/metrics` reports as event lag.
public struct OutboxStatus: Sendable, Equatable {
    /// Events written and not yet delivered.
    public var pending: Int
    /// When the oldest of them was written; nil when none is pending.
    public var oldest: Timestamp?

    public init(pending: Int, oldest: Timestamp?) {
        self.pending = pending
        self.oldest = oldest
    }
}
