/// The operators' endpoints, by their path segment.
package enum OperationsEndpoint: String, Sendable {
    /// Prometheus text format (docs/operations.md lists the metrics).
    case metrics
    /// The process is up and answering: no store is asked.
    case healthz
    /// The metadata and blob stores answer within a short timeout.
    case readyz
}
