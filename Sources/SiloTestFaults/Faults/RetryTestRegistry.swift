import SiloCore
import SiloServerKit
import SiloWire
import Synchronization

/// The retry tests of `silo serve --test-faults`, in memory: created, read and deleted through `/retry_test`, and
/// consumed by requests that carry `x-retry-test-id`. Bounded in tests, operations per test and instructions per
/// operation; at the bound of tests the oldest completed one makes room, and with none completed creation is refused.
final class RetryTestRegistry: Sendable {
    struct RetryTest: Sendable {
        let id: String
        /// Per operation, in the order the client gave them, the instructions not consumed yet.
        var instructions: [(operation: String, pending: [FaultInstruction])]
        var completed: Bool

        /// storage-testbench's resource shape.
        var json: JSONValue {
            var byOperation = JSONObject()
            for entry in instructions { byOperation[entry.operation] = .array(entry.pending.map { .string($0.text) }) }
            return .object([
                "id": .string(id), "instructions": .object(byOperation), "completed": .bool(completed),
                "transport": .string("HTTP"),
            ])
        }
    }

    /// What a request finds for its operation.
    enum Lookup: Equatable {
        case noSuchTest
        case nothingPending
        case next(FaultInstruction)
    }

    static let maxTests = 1000
    static let maxOperationsPerTest = 64
    static let maxInstructionsPerOperation = 100

    private struct State {
        var tests: [String: RetryTest] = [:]
        /// Ids, oldest first.
        var order: [String] = []
    }

    private let state = Mutex(State())

    init() {}

    /// Throws `.invalidArgument` beyond the per-test bounds, `.tooManyRequests` when every slot holds an unfinished
    /// test.
    func create(_ instructions: [(operation: String, pending: [FaultInstruction])]) throws -> RetryTest {
        guard instructions.count <= Self.maxOperationsPerTest else {
            throw StorageError(
                .invalidArgument, "a retry test may name at most \(Self.maxOperationsPerTest) operations")
        }
        for entry in instructions where entry.pending.count > Self.maxInstructionsPerOperation {
            throw StorageError(
                .invalidArgument,
                "at most \(Self.maxInstructionsPerOperation) instructions per operation (\(entry.operation))")
        }
        let test = RetryTest(
            id: String(RandomID.uuid().filter { $0 != "-" }), instructions: instructions,
            completed: instructions.allSatisfy { $0.pending.isEmpty })
        try state.withLock { state in
            if state.tests.count >= Self.maxTests {
                guard let index = state.order.firstIndex(where: { state.tests[$0]?.completed == true }) else {
                    throw StorageError(
                        .tooManyRequests,
                        "\(Self.maxTests) retry tests are unfinished; DELETE /retry_test/{id} those no longer needed")
                }
                state.tests[state.order.remove(at: index)] = nil
            }
            state.tests[test.id] = test
            state.order.append(test.id)
        }
        return test
    }

    func test(_ id: String) -> RetryTest? { state.withLock { $0.tests[id] } }

    func all() -> [RetryTest] { state.withLock { state in state.order.compactMap { state.tests[$0] } } }

    /// False when there is no such test.
    func delete(_ id: String) -> Bool {
        state.withLock { state in
            guard state.tests.removeValue(forKey: id) != nil else { return false }
            state.order.removeAll { $0 == id }
            return true
        }
    }

    /// The next instruction of `operation`, left in place.
    func next(_ id: String, _ operation: String) -> Lookup {
        state.withLock { state in
            guard let test = state.tests[id] else { return .noSuchTest }
            guard let entry = test.instructions.first(where: { $0.operation == operation }),
                let first = entry.pending.first
            else { return .nothingPending }
            return .next(first)
        }
    }

    /// Consumes `instruction` if it is still the next of `operation` (a concurrent request may have taken it); the
    /// test is completed when none is left.
    func consume(_ id: String, _ operation: String, _ instruction: FaultInstruction) {
        state.withLock { state in
            guard var test = state.tests[id],
                let index = test.instructions.firstIndex(where: { $0.operation == operation }),
                test.instructions[index].pending.first == instruction
            else { return }
            test.instructions[index].pending.removeFirst()
            test.completed = test.instructions.allSatisfy { $0.pending.isEmpty }
            state.tests[id] = test
        }
    }
}
