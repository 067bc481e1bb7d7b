/// When a failed delivery is tried again: exponential in the attempts made, capped, with "full jitter" between
/// half and all of the step, so many events that failed together (a receiver down) do not come back together.
public struct DeliveryBackoff: Sendable, Equatable {
    public var initial: Duration = .seconds(1)
    public var maximum: Duration = .seconds(300)

    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(300)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The wait after the `attempts`-th failure (1 for the first), with `unit` in [0, 1) choosing within the jitter.
    public func delay(afterAttempts attempts: Int, unit: Double) -> Duration {
        let step = min(Self.seconds(maximum), Self.seconds(initial) * Double(1 << min(max(attempts - 1, 0), 30)))
        return .microseconds(Int64(step * (0.5 + 0.5 * min(max(unit, 0), 1)) * 1_000_000))
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
