/// The events a task reports, with Firebase's raw values. No custom `description`: it prints its case name
/// (`progress`), as Firebase's does in Swift.
public enum StorageTaskStatus: Int, Sendable, CaseIterable {
    case unknown = 0
    case resume = 1
    case progress = 2
    case pause = 3
    case success = 4
    case failure = 5

    /// The word Firebase's snapshot descriptions use (`<State: Paused>`).
    var stateName: String {
        switch self {
        case .unknown: "Unknown"
        case .resume: "Resume"
        case .progress: "Progress"
        case .pause: "Paused"
        case .success: "Success"
        case .failure: "Failed"
        }
    }
}
