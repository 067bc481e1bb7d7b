import SiloCore

/// The rules engine behind the server's `AccessPolicy` seam.
public struct RulesAccessPolicy: AccessPolicy {
    public let program: RulesProgram
    public let documents: (any DocumentSource)?
    public let listChildMode: Bool

    public init(program: RulesProgram, documents: (any DocumentSource)? = nil, listChildMode: Bool = false) {
        self.program = program
        self.documents = documents
        self.listChildMode = listChildMode
    }

    /// Admin credentials bypass rules entirely (spec §8.3); everything else is decided by the program.
    public func allows(_ request: AccessRequest) -> Bool {
        if request.principal?.isAdmin == true { return true }
        return program.evaluate(
            request, documents: documents, options: .init(trace: false, explain: false, listChildMode: listChildMode)
        ).allowed
    }

    /// The full decision with a reason (and optionally a trace), for logging denials.
    public func decide(_ request: AccessRequest, trace: Bool = false) -> RulesDecision {
        if request.principal?.isAdmin == true {
            return RulesDecision(allowed: true, reason: "allowed: admin credential", trace: [], expressionsEvaluated: 0)
        }
        return program.evaluate(
            request, documents: documents, options: .init(trace: trace, explain: true, listChildMode: listChildMode))
    }
}
