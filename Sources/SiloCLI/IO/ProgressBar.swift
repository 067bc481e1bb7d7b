import Foundation
import Synchronization

/// A one-line progress bar (`name [#####-----]  45%  12.0/27.0 MiB  4.1 MiB/s  ETA 0:04`) redrawn in place with `\r`
/// at most ten times a second. It draws only on a terminal; elsewhere every call does nothing.
final class ProgressBar: Sendable {
    private struct State {
        var total: Int64
        var completed: Int64 = 0
        var lastDraw: ContinuousClock.Instant?
        var finished = false
    }

    private let sink: any OutputSink
    private let label: String
    private let started = ContinuousClock.now
    private let state: Mutex<State>

    init(sink: any OutputSink, label: String, total: Int64) {
        self.sink = sink
        self.label = label
        self.state = Mutex(State(total: total))
    }

    var isDrawing: Bool { sink.isTerminal }

    /// Records progress (and a total learnt late); redraws when 100 ms passed since the last draw.
    func update(completed: Int64, total: Int64? = nil) {
        guard isDrawing else { return }
        let now = ContinuousClock.now
        let line: String? = state.withLock { state in
            guard !state.finished else { return nil }
            state.completed = completed
            if let total, total >= 0 { state.total = total }
            if let last = state.lastDraw, now - last < .milliseconds(100) { return nil }
            state.lastDraw = now
            return render(state, now: now)
        }
        if let line { sink.write("\r" + line + "\u{1B}[K") }
    }

    /// Draws the final state and ends the line.
    func finish(completed: Int64? = nil) {
        guard isDrawing else { return }
        let line: String? = state.withLock { state in
            guard !state.finished else { return nil }
            state.finished = true
            if let completed { state.completed = completed }
            if state.total < state.completed { state.total = state.completed }
            return render(state, now: .now)
        }
        if let line { sink.write("\r" + line + "\u{1B}[K\n") }
    }

    /// Ends the line without claiming completion (after an error or Ctrl-C).
    func abandon() {
        guard isDrawing else { return }
        let drawn = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished && state.lastDraw != nil
        }
        if drawn { sink.write("\n") }
    }

    private func render(_ state: State, now: ContinuousClock.Instant) -> String {
        let elapsed = max(0.001, seconds(now - started))
        let rate = Double(state.completed) / elapsed
        let fraction =
            state.total > 0 ? min(1, Double(state.completed) / Double(state.total)) : (state.finished ? 1 : 0)
        let width = 24
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let percent = String(format: "%3d%%", Int(fraction * 100))
        var eta = "--:--"
        if state.finished {
            eta = Self.clock(elapsed)
        } else if rate > 0, state.total > 0 {
            eta = Self.clock(Double(state.total - state.completed) / rate)
        }
        let name = label.count > 28 ? "…" + label.suffix(27) : label
        return
            "\(name) [\(bar)] \(percent)  \(Self.bytes(state.completed))/\(Self.bytes(state.total))  "
            + "\(Self.bytes(Int64(rate)))/s  \(state.finished ? "in" : "ETA") \(eta)"
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(max(0, count))
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(Int(value)) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "--:--" }
        let total = Int(seconds.rounded())
        return total >= 3600
            ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%d:%02d", total / 60, total % 60)
    }
}
