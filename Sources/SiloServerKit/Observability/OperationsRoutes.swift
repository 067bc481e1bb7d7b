import SiloCore
import SiloHTTP
import SiloWire

/// `/healthz`, `/readyz` and `/metrics`.
///
/// Who may read what: `/healthz` and `/readyz` say only up or down, so anyone may ask (load balancers and
/// orchestrators send no credentials). `/metrics` names routes, rates and sizes, so it answers as the admin API
/// does: anyone in emulator mode (the server listens where only its developer reaches it), otherwise callers with
/// an admin key (`Authorization: Bearer <key>`, which Prometheus sends from `authorization.credentials_file`).
struct OperationsRoutes: Sendable {
    let service: ObjectService
    let observability: Observability
    let readiness: ReadinessProbe

    func handle(_ endpoint: OperationsEndpoint, _ context: RequestContext) -> RequestDisposition {
        guard context.method == "GET" || context.method == "HEAD" else {
            return .respond(
                Reply.text(405, "\(context.method) is not allowed here; use GET\n", headers: ["Allow": "GET, HEAD"]))
        }
        switch endpoint {
        case .healthz:
            return .respond(Reply.text(200, "ok\n"))
        case .readyz:
            guard let failures = readiness.check(service) else { return .respond(Reply.text(200, "ready\n")) }
            service.logger.warning(
                "not ready",
                metadata: [
                    "silo.readiness": failures.map { "\($0.store): \($0.error)" }.joined(separator: " | ")
                ])
            // The client learns which store, not why: store errors name hosts and files.
            return .respond(Reply.text(503, "not ready: \(failures.map(\.store).joined(separator: ", "))\n"))
        case .metrics:
            guard context.principal?.isAdmin == true || service.configuration.openAdminAPI else {
                return .respond(
                    Reply.text(
                        context.principal == nil ? 401 : 403,
                        "/metrics needs an admin key (Authorization: Bearer <key>)\n"))
            }
            var headers = HTTPHeaders()
            headers.set("Content-Type", MetricsText.contentType)
            return .respond(HTTPResponse(status: 200, headers: headers, body: .bytes(render().bytes)))
        }
    }

    /// Every family, each once: the server's own, then the registered sources'.
    func render() -> MetricsText {
        var text = MetricsText()
        observability.requests.collect(into: &text)
        CacheCounters.familyHeader(&text)
        if let cache = (try? service.metadata) as? CachingMetadataStore {
            cache.lookups.collect(cache: "metadata", into: &text)
        }
        service.smallBlobs.lookups.collect(cache: "small_blob", into: &text)
        service.versionResponses.lookups.collect(cache: "version_response", into: &text)
        text.family(
            "silo_replayed_answers_total", .counter,
            help: "Requests answered again from an event loop's memo of the same request head, without the handler.")
        text.sample("silo_replayed_answers_total", observability.replays[0])
        text.family(
            "silo_transcoded_bytes_total", .counter,
            help: "Bytes of gzip objects inflated for clients that do not accept gzip (decompressive transcoding).")
        text.sample("silo_transcoded_bytes_total", service.inflation.counters[0])
        text.family(
            "silo_transcode_refusals_total", .counter,
            help:
                "Transcoding downloads refused (429) or cut off because their caller's inflated-bytes budget was spent."
        )
        text.sample("silo_transcode_refusals_total", service.inflation.counters[1])
        let thumbnails = service.configuration.images.transformer == nil ? nil : service.images.counters
        if let thumbnails {
            // A miss is a request that needed a transform, its own or one it shared.
            text.sample(CacheCounters.family, ["cache": "thumbnail", "result": "hit"], UInt64(thumbnails.cacheHits))
            text.sample(
                CacheCounters.family, ["cache": "thumbnail", "result": "miss"],
                UInt64(thumbnails.transforms + thumbnails.shared))
            text.family(
                "silo_thumbnail_transforms_total", .counter,
                help: "Thumbnails made (libvips transforms), on demand and for presets.")
            text.sample("silo_thumbnail_transforms_total", UInt64(thumbnails.transforms))
            text.family("silo_thumbnail_cache_bytes", .gauge, help: "Bytes the thumbnail result cache holds on disk.")
            text.sample("silo_thumbnail_cache_bytes", thumbnails.cachedBytes)
            text.family(
                "silo_thumbnail_preset_jobs_pending", .gauge,
                help: "Preset jobs queued and not yet run (saved ones included, after a restart).")
            text.sample("silo_thumbnail_preset_jobs_pending", Int64(thumbnails.presetsPending))
            text.family(
                "silo_thumbnail_preset_jobs_dropped_total", .counter,
                help: "Uploads under a preset that got no thumbnails: maxPendingPresetJobs were waiting.")
            text.sample("silo_thumbnail_preset_jobs_dropped_total", UInt64(thumbnails.presetsDropped))
        }
        let reclaims = service.reclaimer.backlog
        text.family(
            "silo_blob_reclaims_waiting", .gauge,
            help: "Blobs that writes freed (overwritten or deleted versions) waiting for deletion after their answers.")
        text.sample("silo_blob_reclaims_waiting", Int64(reclaims.waiting))
        text.family(
            "silo_blob_reclaims_left_total", .counter,
            help: "Freed blobs left to the maintenance pass's collection because the deletion queue was full.")
        text.sample("silo_blob_reclaims_left_total", UInt64(reclaims.leftToCollector))
        text.family(
            "silo_maintenance_passes_total", .counter,
            help: "Maintenance passes completed (expiry, lifecycle, soft-delete purges, garbage collection).")
        text.sample("silo_maintenance_passes_total", service.maintenanceCounters.passes)
        text.family(
            "silo_garbage_blobs_collected_total", .counter,
            help: "Blobs the maintenance passes deleted: abandoned uploads' bytes, and freed bytes left to them.")
        text.sample("silo_garbage_blobs_collected_total", service.maintenanceCounters.blobsCollected)
        do {
            let usage = try service.metadata.activeSessionTotals()
            text.family(
                "silo_upload_sessions_open", .gauge,
                help: "Resumable upload sessions started and neither finished nor expired (every API).")
            text.sample("silo_upload_sessions_open", Int64(usage.sessions))
            text.family("silo_upload_session_bytes", .gauge, help: "Bytes received so far by the open upload sessions.")
            text.sample("silo_upload_session_bytes", usage.bytes)
        } catch {
            // Reported as missing rather than as zero; the scrape still succeeds.
            service.logger.warning(
                "metrics: open upload sessions unavailable",
                metadata: ["silo.error": StorageError.wrap(error).detailedDescription()])
        }
        text.family(
            "silo_store_errors_total", .counter,
            help: "Server-side failures (5xx answers) by the error code behind them: store and disk errors (ioError, "
                + "corrupt, unavailable, insufficientStorage) and internal errors.")
        for (kind, count) in observability.failures.snapshot {
            text.sample("silo_store_errors_total", ["kind": kind], count)
        }
        observability.accessLog?.collect(into: &text)
        text.family("silo_process_start_time_seconds", .gauge, help: "When the server started, in Unix seconds.")
        text.sample("silo_process_start_time_seconds", Double(observability.started.microseconds) / 1_000_000)
        for source in observability.registered { source.collect(into: &text) }
        return text
    }
}
