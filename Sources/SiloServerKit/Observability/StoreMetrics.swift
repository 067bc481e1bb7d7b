public import SiloCore

/// Per-bucket objects and bytes for `/metrics`, read from the counts the metadata store keeps in the transactions
/// that change them (``MetadataStore/bucketUsage()``): one indexed read per scrape, never a scan of the objects.
/// Scrapes run on a worker, so the store call may block. The bucket label takes only buckets the store holds.
public struct BucketUsageMetrics: MetricsSource {
    let store: any MetadataStore

    public init(store: any MetadataStore) { self.store = store }

    public func collect(into text: inout MetricsText) {
        // A store that cannot answer now leaves the families out of this scrape rather than failing it;
        // `/readyz` is where an unreachable store shows.
        guard let usage = try? store.bucketUsage() else { return }
        let buckets = usage.sorted { $0.key < $1.key }
        let families: [(String, String, KeyPath<BucketUsage, Int64>)] = [
            ("silo_bucket_objects", "Live objects in the bucket.", \.objects),
            ("silo_bucket_bytes", "Bytes of the bucket's live objects.", \.bytes),
            (
                "silo_bucket_noncurrent_objects", "Noncurrent versions kept by the bucket's versioning.",
                \.noncurrentObjects
            ),
            ("silo_bucket_noncurrent_bytes", "Bytes of the bucket's noncurrent versions.", \.noncurrentBytes),
        ]
        for (name, help, field) in families {
            text.family(name, .gauge, help: help)
            for (bucket, counts) in buckets { text.sample(name, ["bucket": bucket.rawValue], counts[keyPath: field]) }
        }
    }
}

/// Storage-event delivery for `/metrics`, from whatever delivers them (the executable passes its dispatcher's
/// `statistics()`; the server does not depend on the dispatcher).
public struct EventDeliveryMetrics: MetricsSource {
    let statistics: @Sendable () -> EventDeliveryStatistics

    public init(_ statistics: @escaping @Sendable () -> EventDeliveryStatistics) { self.statistics = statistics }

    public func collect(into text: inout MetricsText) {
        let now = statistics()
        text.family(
            "silo_events_delivered_total", .counter, help: "Storage events delivered to every webhook that wanted them."
        )
        text.sample("silo_events_delivered_total", Int64(now.delivered))
        text.family(
            "silo_events_failed_attempts_total", .counter,
            help: "Webhook deliveries that failed (no 2xx in time) and will be retried.")
        text.sample("silo_events_failed_attempts_total", Int64(now.failedAttempts))
        text.family(
            "silo_events_abandoned_total", .counter,
            help: "Storage events given up on: undelivered when the retention window (--event-retention) ran out.")
        text.sample("silo_events_abandoned_total", Int64(now.abandoned))
        text.family("silo_events_pending", .gauge, help: "Storage events in the outbox, not yet delivered.")
        text.sample("silo_events_pending", Int64(now.pending))
        text.family(
            "silo_events_lag_seconds", .gauge, help: "How long the oldest undelivered event has waited (0: none).")
        text.sample("silo_events_lag_seconds", now.lagSeconds)
    }
}
