import SiloCore

/// Reclaims what crashes and abandoned uploads leave: expired upload sessions (an XML multipart upload with its
/// parts), and blobs registered before `blobsRegisteredBefore` that nothing references (each handed over by the
/// store first: ``ObjectService/collectBlob(_:registeredBefore:at:)``); runs the buckets' lifecycle rules and purges
/// soft-deleted versions whose time is up. `now` is the pass's clock (tests pass a later one).
package enum Maintenance {
    static func run(
        service: ObjectService, registry: SessionRegistry, blobsRegisteredBefore blobCutoff: Timestamp, now: Timestamp,
        lifecycle: Bool
    ) -> (sessions: Int, blobs: Int) {
        if lifecycle { _ = Lifecycle(service: service, now: now).run() }
        // The deletions that requests (and the lifecycle rules just now) queued are done first: the collection below
        // would otherwise race them for the same blobs, and a pass's counts would depend on how far they had got.
        service.reclaimer.wait()
        var expiredSessions = 0
        var deletedBlobs = 0
        do {
            let cutoff = Timestamp(
                microseconds: now.microseconds - service.configuration.sessionLifetimeSeconds * 1_000_000)
            for session in try service.metadata.sessions(updatedBefore: cutoff) {
                // A part waits for its XML multipart upload, which every part upload touches: the parts of an
                // upload still in progress stay however old they are, those of an expired or finished one go.
                if session.api == .xmlPart, let uploadID = XMLMultipartIDs.upload(ofPart: session),
                    let upload = try service.metadata.session(id: uploadID), upload.state == .active,
                    upload.updated >= cutoff
                {
                    continue
                }
                try service.metadata.deleteSession(id: session.id)
                registry.forget(session.id)
                expiredSessions += 1
            }
            // Soft-deleted versions past their hard-delete time give their blobs to the collection below.
            while try service.metadata.purgeSoftDeleted(hardDeletedBy: now, limit: 1000) == 1000 {}
            while true {
                let garbage = try service.metadata.garbageBlobs(registeredBefore: blobCutoff, limit: 1000)
                var collected = 0
                for id in garbage where try service.collectBlob(id, registeredBefore: blobCutoff, at: now) {
                    collected += 1
                }
                deletedBlobs += collected
                // A full page that gave nothing up (all taken by commits meanwhile) would only come back again.
                if garbage.count < 1000 || collected == 0 { break }
            }
        } catch {
            service.logger.warning("maintenance pass stopped early", metadata: ["silo.error": "\(error)"])
        }
        service.maintenanceCounters.passed(collecting: deletedBlobs)
        if expiredSessions > 0 || deletedBlobs > 0 {
            service.logger.info(
                "maintenance reclaimed storage",
                metadata: ["silo.sessions.expired": "\(expiredSessions)", "silo.blobs.deleted": "\(deletedBlobs)"])
        }
        return (expiredSessions, deletedBlobs)
    }
}

/// What the maintenance passes did, for `/metrics`: passes completed and blobs collected.
final class MaintenanceCounters: Sendable {
    private let counters = AtomicCounters(count: 2)

    func passed(collecting blobs: Int) {
        counters.add(1, UInt64(blobs))
        counters.add(0)
    }

    var passes: UInt64 { counters[0] }
    var blobsCollected: UInt64 { counters[1] }
}
