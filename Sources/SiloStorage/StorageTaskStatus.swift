/// The events a task reports, with Firebase's raw values.
public enum StorageTaskStatus: Int, Sendable, CaseIterable, CustomStringConvertible {
    case unknown = 0
    case resume = 1
    case progress = 2
    case pause = 3
    case success = 4
    case failure = 5

    public var description: String {
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
