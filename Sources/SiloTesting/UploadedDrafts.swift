public import SiloCore

extension MetadataStore {
    /// Commits `draft` as an upload does: its blob registered as pending first (an upload registers it before the
    /// first byte, ``MetadataStore/registerPendingBlob(_:at:)``), then made live. A store takes off the garbage list
    /// only blobs that are on it, so a test that commits a draft whose blob was never registered finds it refused.
    @discardableResult
    public func insertUploaded(
        _ draft: ObjectDraft, conditions: Preconditions, at time: Timestamp, finalizing sessionID: String? = nil
    ) throws -> (stored: ObjectRecord, replaced: ObjectRecord?) {
        try registerPendingBlob(draft.blobID, at: time)
        return try insertObject(draft, conditions: conditions, at: time, finalizing: sessionID)
    }
}
