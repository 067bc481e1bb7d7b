/// What `/metrics` reports about storage-event delivery (`EventDispatcher.statistics()` in SiloEvents): in core, so
/// the server can take a source of it without depending on the dispatcher.
public struct EventDeliveryStatistics: Sendable, Equatable {
    /// Events delivered to every webhook that wanted them, since start.
    public var delivered: Int
    /// Delivery attempts that failed (a webhook did not answer 2xx in time), since start.
    public var failedAttempts: Int
    /// Events in the outbox now.
    public var pending: Int
    /// How long the oldest pending event has waited, in seconds (0 when none is pending).
    public var lagSeconds: Double
    /// Events given up on since start: still undelivered when the retention window ran out.
    public var abandoned: Int

    public init(delivered: Int, failedAttempts: Int, pending: Int, lagSeconds: Double, abandoned: Int = 0) {
        self.delivered = delivered
        self.failedAttempts = failedAttempts
        self.pending = pending
        self.lagSeconds = lagSeconds
        self.abandoned = abandoned
    }
}
