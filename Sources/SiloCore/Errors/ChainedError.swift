/// The shape every module's error type shares: a code, a message that names the object, a
/// cause, and where it was raised. Conforming gives `description` and `detailedDescription()` for free.
public protocol ChainedError: Error, Sendable, CustomStringConvertible {
    associatedtype Code: CustomStringConvertible
    var code: Code { get }
    var message: String { get }
    var cause: (any Error & Sendable)? { get }
    var file: String { get }
    var line: Int { get }
}

extension ChainedError {
    public var description: String { "\(code): \(message)" }

    /// The message followed by the chain of causes — across modules — for logs.
    public func detailedDescription() -> String {
        var text = "\(code): \(message) (\(file):\(line))"
        var next: (any Error)? = cause
        while let current = next {
            if let chained = current as? any ChainedError {
                text += "\n  caused by \(chained.codeText): \(chained.message) (\(chained.file):\(chained.line))"
                next = chained.cause
            } else {
                text += "\n  caused by \(current)"
                next = nil
            }
        }
        return text
    }

    fileprivate var codeText: String { "\(code)" }
}

/// Any error as a log line: a ``ChainedError``'s whole chain of causes, anything else as it describes itself.
public func detailedDescription(of error: any Error) -> String {
    (error as? any ChainedError)?.detailedDescription() ?? "\(error)"
}
