import Dispatch
package import SiloCore
package import SiloServerKit
import Synchronization

/// Presets as the Resize Images extension does them: an image uploaded under a preset's pattern gets
/// `{dir}/thumbnails/{name}_{W}x{H}.{ext}` written beside it through the normal upload commit (so each is one new
/// object version with its own download token), the original optionally deleted after. Jobs run one at a time on
/// the preset queue, after the upload has committed and answered; images under a `thumbnails/` folder are never
/// processed again. With `presetJobDirectory` a job is saved before the upload commits (naming the version by its
/// blob, as its generation is not known yet) and runs again after a stop or a crash, even one between the commit
/// and the answer; running it twice writes nothing twice (see ``runPreset(_:_:)``), and a job whose commit never
/// happened finds no version with its blob and does nothing.
extension ImageService {
    /// The custom metadata key a preset's thumbnail names the original's generation with, so that a job run again
    /// knows what it wrote already.
    static let sourceGenerationKey = "resizedImageSourceGeneration"

    /// Takes a job for an upload of `name` with `contentType` (stored as given, so the presets that apply now are
    /// those of the committed version) before it commits: a crash after the commit then still leaves the job. Nil
    /// when no preset applies, or when the bound is reached (logged and counted).
    package func presetTicket(
        _ bucket: BucketName, _ name: ObjectName, contentType: String?, blob: BlobID, service: ObjectService
    ) -> PresetTicket? {
        guard !presets(bucket, name, contentType: contentType).isEmpty, admitPresetJob(bucket, name, service.logger)
        else { return nil }
        return PresetTicket(
            file: savePresetJob(PresetJobFiles.Job(bucket: bucket, name: name, version: .blob(blob)), service.logger))
    }

    /// The commit did not happen: the ticket's job goes, and its place in the bound is free again.
    package func returnTicket(_ ticket: PresetTicket) {
        if let file = ticket.file { presetJobs?.remove(file) }
        pendingPresets.subtract(1, ordering: .relaxed)
    }

    /// Queues the ticket's job for `record`, the version its upload committed. Called before the upload answers.
    package func queue(_ ticket: PresetTicket, for record: ObjectRecord, service: ObjectService) {
        schedule(PresetJobFiles.Job(record), file: ticket.file, service)
    }

    /// Counts a job against `maxPendingPresetJobs`; false (logged and counted) when that many wait already.
    private func admitPresetJob(_ bucket: BucketName, _ name: ObjectName, _ logger: Logger) -> Bool {
        guard pendingPresets.add(1, ordering: .relaxed).newValue <= settings.maxPendingPresetJobs else {
            pendingPresets.subtract(1, ordering: .relaxed)
            droppedPresets.add(1, ordering: .relaxed)
            logger.warning(
                "thumbnail presets skipped: queue full",
                metadata: ["silo.bucket": "\(bucket)", "silo.object": name.rawValue])
            return false
        }
        return true
    }

    /// Saves `job` if there is a job directory; its file, or nil (not saved: the thumbnails are still made, only
    /// not after a restart).
    private func savePresetJob(_ job: PresetJobFiles.Job, _ logger: Logger) -> String? {
        guard let jobs = presetJobs else { return nil }
        do {
            return try jobs.save(job)
        } catch {
            logger.warning(
                "thumbnail preset job not saved",
                metadata: [
                    "silo.bucket": "\(job.bucket)", "silo.object": job.name.rawValue, "silo.error": "\(error)",
                ])
            return nil
        }
    }

    /// Queues the jobs the previous run left, once. Called at startup after the garbage collection that assumes no
    /// write in flight (a job's thumbnail is a blob written before it is committed).
    package func resumePresets(service: ObjectService) -> Int {
        guard let jobs = presetJobs, !resumedPresets.exchange(true, ordering: .relaxed) else { return 0 }
        for leftover in jobs.leftover {
            // Counted against the bound, not refused by it: each was accepted by the run that saved it.
            pendingPresets.add(1, ordering: .relaxed)
            schedule(leftover.job, file: leftover.file, service)
        }
        if !jobs.leftover.isEmpty {
            service.logger.info("thumbnail preset jobs resumed", metadata: ["silo.jobs": "\(jobs.leftover.count)"])
        }
        return jobs.leftover.count
    }

    /// The presets of the bucket `record` falls under: an image, not itself a thumbnail, matching the pattern.
    private func presets(for record: ObjectRecord) -> [ThumbnailPreset] {
        presets(record.bucket, record.name, contentType: record.fields.contentType)
    }

    private func presets(_ bucket: BucketName, _ name: ObjectName, contentType: String?) -> [ThumbnailPreset] {
        guard let settings = settings.bucket(bucket), !settings.presets.isEmpty,
            contentType?.lowercased().hasPrefix("image/") == true, !Self.isThumbnail(name)
        else { return [] }
        return settings.presets.filter { (try? $0.glob.matches(name.rawValue)) == true }
    }

    /// Runs `job` on the preset queue; its file goes once it has run, whatever the outcome (a failure is logged,
    /// and running it again after a restart would fail the same way).
    private func schedule(_ job: PresetJobFiles.Job, file: String?, _ service: ObjectService) {
        presetQueue.async { [self] in
            defer {
                if let file { presetJobs?.remove(file) }
                pendingPresets.subtract(1, ordering: .relaxed)
            }
            runPresetJob(job, service)
        }
    }

    /// The presets of the version `job` names, if it is still the live one: one overwritten or deleted since has
    /// nothing to do (a newer upload queued its own job). Read again here: a job may run a restart after its upload.
    private func runPresetJob(_ job: PresetJobFiles.Job, _ service: ObjectService) {
        let record: ObjectRecord
        do {
            guard let live = try service.object(job.bucket, job.name, generation: nil), job.names(live) else {
                return
            }
            record = live
        } catch {
            service.logger.warning(
                "thumbnail preset failed",
                metadata: [
                    "silo.bucket": "\(job.bucket)", "silo.object": job.name.rawValue, "silo.error": "\(error)",
                ])
            return
        }
        for preset in presets(for: record) { runPreset(preset, record, service) }
    }

    /// Writes every size of `preset` not yet written from this version (a job cut short by a crash runs again);
    /// deletes the original after, if asked and if it is still the version made.
    private func runPreset(_ preset: ThumbnailPreset, _ record: ObjectRecord, _ service: ObjectService) {
        var written = 0
        for size in preset.sizes {
            do {
                let format = preset.format ?? Self.format(of: record) ?? .webp
                let spec = try ThumbnailSpec(
                    width: size.width, height: size.height, fit: preset.fit, format: format, quality: preset.quality)
                let name = try ThumbnailPreset.thumbnailName(record.name, size, format)
                let existing = try service.object(record.bucket, name, generation: nil)
                if existing?.fields.customMetadata[Self.sourceGenerationKey] != String(record.generation) {
                    try writeThumbnail(
                        try transform(record, spec, blobs: service.blobs), name: name, of: record, spec, service)
                }
                written += 1
            } catch {
                service.logger.warning(
                    "thumbnail preset failed",
                    metadata: [
                        "silo.bucket": "\(record.bucket)", "silo.object": record.name.rawValue,
                        "silo.size": "\(size)", "silo.error": "\(error)",
                    ])
            }
        }
        guard preset.deleteOriginal, written == preset.sizes.count else { return }
        do {
            try service.deleteObject(
                record.bucket, record.name, generation: nil,
                conditions: Preconditions(ifGenerationMatch: record.generation), time: .now())
        } catch {
            service.logger.info(
                "thumbnail preset kept the original",
                metadata: ["silo.object": record.name.rawValue, "silo.error": "\(error)"])
        }
    }

    private func writeThumbnail(
        _ bytes: [UInt8], name: ObjectName, of record: ObjectRecord, _ spec: ThumbnailSpec, _ service: ObjectService
    ) throws {
        let time = Timestamp.now()
        let ingest = try BlobIngest(service: service, time: time)
        do {
            try bytes.withUnsafeBytes { try ingest.write($0) }
            let blob = try ingest.finish()
            let fields = ObjectFields(
                contentType: spec.format.contentType, cacheControl: record.fields.cacheControl,
                customMetadata: ["resizedImage": "true", Self.sourceGenerationKey: String(record.generation)],
                downloadTokens: [RandomID.uuid()])
            _ = try service.commitUpload(
                bucket: record.bucket, name: name, blob: blob, fields: fields,
                conditions: .none, principal: ObjectService.itself, time: time, createsBucket: false)
            presetWrites.add(1, ordering: .relaxed)
        } catch {
            ingest.discard()
            throw error
        }
    }

    /// Whether `name` is in a `thumbnails/` folder (a preset's output, never processed again).
    static func isThumbnail(_ name: ObjectName) -> Bool {
        let parts = name.rawValue.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count >= 2 && parts[parts.count - 2] == "thumbnails"
    }

    /// The original's own format, when it is one thumbnails are written in.
    private static func format(of record: ObjectRecord) -> ThumbnailSpec.Format? {
        switch record.fields.contentType?.lowercased() {
        case "image/jpeg", "image/jpg": .jpeg
        case "image/png": .png
        case "image/webp": .webp
        case "image/avif": .avif
        default: nil
        }
    }
}
