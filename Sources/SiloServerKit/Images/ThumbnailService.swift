package import SiloCore
package import SiloHTTP

/// Thumbnails: `thumbnail=` reads, and the preset thumbnails an upload owes. The composition plugs one in
/// (SiloThumbnails); the kit calls it at a thumbnail read, around an upload's commit, and at startup. The transform
/// itself is the settings' ``ImageSettings/transformer`` (SiloImages, on libvips).
package protocol ThumbnailService: Sendable {
    /// The answer to a read of `spec` of `record`, authorized as a download of the original. On an event loop (an
    /// inline attempt) only what is in memory is answered; anything else throws ``InlineAttempt/wouldBlock(_:)``.
    func respond(_ record: ObjectRecord, _ spec: ThumbnailSpec, request: HTTPRequestHead, service: ObjectService)
        throws -> HTTPResponse

    /// Before an upload of `name` commits: the preset jobs it owes (saved, so that a crash after the commit still
    /// leaves them), nil when no preset applies or too many jobs wait.
    func presetTicket(
        _ bucket: BucketName, _ name: ObjectName, contentType: String?, blob: BlobID, service: ObjectService
    ) -> PresetTicket?

    /// The commit did not happen: the ticket's jobs go.
    func returnTicket(_ ticket: PresetTicket)

    /// The commit made `record`: the ticket's jobs are queued (called before the upload answers).
    func queue(_ ticket: PresetTicket, for record: ObjectRecord, service: ObjectService)

    /// Queues the jobs the previous run saved and did not finish, once; how many.
    func resumePresets(service: ObjectService) -> Int

    /// Waits until every preset job queued so far has run.
    func drainPresets()

    var counters: ThumbnailCounters { get }
}

/// The preset jobs an upload owes, taken before it commits.
package struct PresetTicket: Sendable {
    /// Where the job was saved, if it was.
    package let file: String?

    package init(file: String?) { self.file = file }
}

/// What thumbnails have done since start (metrics and tests).
public struct ThumbnailCounters: Sendable {
    /// Thumbnails made, answers from the cache, misses answered by a transform another request started, and misses
    /// waiting for one now.
    public var transforms = 0, cacheHits = 0, shared = 0, waiting = 0
    /// Preset thumbnails written, preset jobs waiting, and uploads that got none because too many waited.
    public var presetWrites = 0, presetsPending = 0, presetsDropped = 0
    /// The bytes the disk cache holds now.
    public var cachedBytes: Int64 = 0

    package init() {}
}

extension SiloServerApp {
    /// What thumbnails have done since start (tests and metrics).
    public var thumbnailCounters: ThumbnailCounters { service.images.counters }

    /// Waits until every preset job queued so far has run (tests; shutdown).
    public func drainThumbnailPresets() { service.images.drainPresets() }

    /// Queues the preset jobs the previous run saved and did not finish (`presetJobDirectory`), once; returns how
    /// many. `silo serve` calls it after the startup's garbage collection, before the listener opens.
    @discardableResult
    public func resumeThumbnailPresets() -> Int { service.images.resumePresets(service: service) }
}
