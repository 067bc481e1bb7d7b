/// Polls until `condition` holds or `seconds` pass, and says whether it held. It returns as soon as the condition
/// holds, so the generous default costs nothing when things go well; a loaded 2-core CI box can be slow. A wait,
/// never a timing assert.
public func eventually(_ seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
