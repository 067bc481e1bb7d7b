public import SiloCore

/// Counts of the decisions ``RulesAccessPolicy`` makes, for `/metrics`: one atomic add or two per decision, so the
/// download path (event loops included) pays no lock. Admin callers bypass the rules and are not counted.
public final class RulesStatistics: MetricsSource {
    private enum Slot: Int, CaseIterable {
        case evaluated, remembered, denied, errors
    }

    private let counters = AtomicCounters(count: Slot.allCases.count)

    public init() {}

    func count(evaluated: Bool, allowed: Bool, errors: Int) {
        counters.add(evaluated ? Slot.evaluated.rawValue : Slot.remembered.rawValue)
        if !allowed { counters.add(Slot.denied.rawValue) }
        if errors > 0 { counters.add(Slot.errors.rawValue, UInt64(errors)) }
    }

    public var evaluations: UInt64 { counters[Slot.evaluated.rawValue] }
    public var rememberedDecisions: UInt64 { counters[Slot.remembered.rawValue] }
    public var denials: UInt64 { counters[Slot.denied.rawValue] }
    public var errors: UInt64 { counters[Slot.errors.rawValue] }

    public func collect(into text: inout MetricsText) {
        text.family(
            "silo_rules_decisions_total", .counter,
            help: "Security Rules decisions: source=evaluated ran the program, source=cache reused a decision that "
                + "depended on the path alone.")
        text.sample("silo_rules_decisions_total", ["source": "evaluated"], evaluations)
        text.sample("silo_rules_decisions_total", ["source": "cache"], rememberedDecisions)
        text.family("silo_rules_denials_total", .counter, help: "Security Rules decisions that denied the request.")
        text.sample("silo_rules_denials_total", denials)
        text.family(
            "silo_rules_errors_total", .counter,
            help: "allow conditions that evaluated to an error (missing field, wrong type) or hit an evaluation limit.")
        text.sample("silo_rules_errors_total", errors)
    }
}
