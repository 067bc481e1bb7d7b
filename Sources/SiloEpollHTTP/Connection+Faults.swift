#if os(Linux)
import SiloHTTP

/// Staged faults (``TransportFault``): only responses of the fault-injection handler carry one.
extension Connection {
    /// Holds all output for `seconds` on the loop's timer; the thread goes on serving other connections.
    func stall(_ seconds: Double) {
        stalled = true
        // Not idle while it waits: the idle timeout counts from the end of the stall.
        lastActivity = loop.now + seconds
        loop.resume(self, after: seconds)
    }

    /// The loop's timer fired: what was held back goes out, then the connection carries on.
    func stallEnded() {
        guard stalled, phase != .closed else { return }
        stalled = false
        outputBlocked = false
        lastActivity = loop.now
        flush()
        guard phase != .closed else { return }
        if !outputBlocked { process() }
        updateInterest()
    }

    /// Closes with a TCP reset, dropping what is unsent.
    func resetConnection() {
        io.resetOnClose()
        close(reason: "staged fault: connection reset")
    }
}
#endif
