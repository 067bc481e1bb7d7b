import Dispatch
import SiloCore
import SiloServer
import SiloServerKit

/// When `silo serve` runs maintenance (``SiloServerApp/collectGarbage(graceSeconds:now:)``).
enum ServeMaintenance {
    /// A first pass at once, in the background (the server is already serving), then one every
    /// `maintenanceIntervalSeconds`, all on one serial queue so that passes never overlap. Cancel the timer to stop.
    ///
    /// The first pass's blob cutoff: on a store this process alone writes, `started` — what was registered before the
    /// process held the store, only a crash can have left; on a store other nodes share, the periodic grace, since
    /// their uploads are in flight. Either way a blob goes only when the store hands it over, so a pass never
    /// deletes bytes that a commit then acknowledges (docs/scaling.md).
    static func start(_ app: SiloServerApp, storeShared: Bool, started: Timestamp) -> any DispatchSourceTimer {
        let queue = DispatchQueue(label: "silo.maintenance", qos: .utility)
        let interval = max(1, app.configuration.maintenanceIntervalSeconds)
        let grace = max(0, app.configuration.garbageGraceSeconds)
        queue.async {
            let now = Timestamp.now()
            let cutoff =
                storeShared ? Timestamp(microseconds: now.microseconds - grace * 1_000_000) : started
            let (sessions, blobs) = app.collectGarbage(blobsRegisteredBefore: cutoff, now: now)
            app.logger.info(
                "startup maintenance pass done",
                metadata: ["silo.sessions.expired": "\(sessions)", "silo.blobs.deleted": "\(blobs)"])
        }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { _ = app.collectGarbage(graceSeconds: grace) }
        timer.resume()
        return timer
    }
}
