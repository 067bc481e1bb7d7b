package import SiloCore
import Synchronization

/// What one attempt to answer on a socket's thread recorded (``InlinePipeline``): whether any step asked for
/// something that is not in memory, and what the answer read besides the object's version and bytes and the rules'
/// decision by path (``Reads``).
/// The record, not the thrown error, decides, because some steps read with `try?` (access checks) and would otherwise
/// take a refused read for a missing resource.
///
/// One per socket thread, bound into that thread's inline ``ObjectService`` when it is made and cleared before each
/// attempt: what a step reports reaches it as a value it was given, not through a thread slot. Atomic only because
/// the service it is bound into is `Sendable`; one thread reads and writes it.
package final class InlineAttempt: Sendable {
    private let refusedFlag = Atomic<Bool>(false)
    private let readBits = Atomic<UInt8>(0)

    /// What an answer may have read besides the object's version, its bytes and the rules' decision by path. Each
    /// step records what it reads where it reads it. An answer that read none of these follows from the request head
    /// and those alone, so it may be replayed while they stand (``ReplayableAnswer``): a list of what an answer may
    /// depend on, not of what it must not.
    package struct Reads: OptionSet, Sendable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// An access decision that read the time, the caller, the resource or a document (``ObjectService/authorize(_:)``).
        static let decision = Reads(rawValue: 1)
        /// A verified credential, good only until it expires (``RequestPipeline/admit(_:_:_:)``).
        static let credential = Reads(rawValue: 2)
        /// The client's own `X-Request-Id`, which the answer echoes (``Observation/observe(_:_:_:)``).
        static let clientRequestID = Reads(rawValue: 4)
    }

    init() {}

    /// Clears the record for the next attempt.
    func begin() {
        refusedFlag.store(false, ordering: .relaxed)
        readBits.store(0, ordering: .relaxed)
    }

    var refused: Bool { refusedFlag.load(ordering: .relaxed) }

    /// What the answer read so far.
    var reads: Reads { Reads(rawValue: readBits.load(ordering: .relaxed)) }

    func read(_ what: Reads) { readBits.bitwiseOr(what.rawValue, ordering: .relaxed) }

    /// Marks the attempt refused and returns the error that unwinds it. Nothing has been written when this is
    /// thrown: the inline service refuses the stores before calling them (``ObjectService/metadata``).
    package func wouldBlock(_ what: @autoclosure () -> String) -> StorageError {
        refusedFlag.store(true, ordering: .relaxed)
        return StorageError(.unavailable, "\(what()) needs the store; not answered inline", cause: WouldBlock())
    }
}

/// The cause of ``InlineAttempt/wouldBlock(_:)``: the answer needs a blocking call.
struct WouldBlock: Error, Sendable {}
