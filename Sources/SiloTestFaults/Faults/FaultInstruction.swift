import SiloCore
import SiloServerKit

/// One instruction of a retry test (storage-testbench's names; docs/test-faults.md), parsed once when the test is
/// created. Each request that carries the test's id and is an operation the test has instructions for consumes the
/// next one.
struct FaultInstruction: Equatable, Sendable {
    enum Action: Equatable, Sendable {
        /// `return-NNN`: answer with that status (400–599) before the request is handled.
        case returnStatus(Int)
        /// `return-NNN-after-NK`: an upload's first N KiB are taken (a resumable chunk's persisted), then NNN.
        case returnStatusAfter(status: Int, bytes: Int64)
        /// `return-reset-connection`: the connection is reset before the request is handled.
        case resetConnection
        /// `return-broken-stream` (the first 4 bytes of the answer's body, as the testbench cuts it) and
        /// `return-broken-stream-after-NK`: the request is handled, its answer cut after that many body bytes.
        case breakBody(afterBytes: Int64)
        /// `return-broken-stream-final-chunk-after-NB`: the request that finalizes a resumable upload is handled (the
        /// object is committed), its answer cut after N bytes.
        case breakFinalChunk(afterBytes: Int64)
        /// `stall-for-Ts-after-NK`: a download's answer stalls T seconds after N KiB; an upload's answer stalls
        /// T seconds once its request has brought the object past N KiB.
        case stall(seconds: Int, afterBytes: Int64)
    }

    /// As the client wrote it (echoed by `GET /retry_test/{id}`).
    let text: String
    let action: Action

    /// Longest instruction text accepted (the longest valid one is far shorter).
    static let maxTextLength = 100
    /// Longest stall (seconds) and largest byte offset (KiB) an instruction may name.
    static let maxStallSeconds = 600
    static let maxKiB: Int64 = 1 << 32

    /// Throws `.invalidArgument` naming the instruction when it is not one of the supported forms.
    init(_ text: String) throws {
        let invalid = StorageError(
            .invalidArgument, "unsupported retry test instruction \"\(text.prefix(Self.maxTextLength))\"")
        guard text.utf8.count <= Self.maxTextLength else { throw invalid }
        self.text = text
        if text == "return-reset-connection" {
            action = .resetConnection
        } else if text == "return-broken-stream" {
            action = .breakBody(afterBytes: 4)
        } else if let n = Self.match(text, "return-broken-stream-after-", "K") {
            action = .breakBody(afterBytes: try Self.kib(n, invalid))
        } else if let n = Self.match(text, "return-broken-stream-final-chunk-after-", "B") {
            guard let bytes = Self.number(n) else { throw invalid }
            action = .breakFinalChunk(afterBytes: Int64(bytes))
        } else if text.hasPrefix("stall-for-"), let body = Self.match(text, "stall-for-", "K"),
            let split = body.firstRange(of: "s-after-")
        {
            guard let seconds = Self.number(body[..<split.lowerBound]), seconds <= Self.maxStallSeconds else {
                throw invalid
            }
            action = .stall(seconds: seconds, afterBytes: try Self.kib(String(body[split.upperBound...]), invalid))
        } else if let body = Self.match(text, "return-", "K"), let split = body.firstRange(of: "-after-") {
            action = .returnStatusAfter(
                status: try Self.status(body[..<split.lowerBound], invalid),
                bytes: try Self.kib(String(body[split.upperBound...]), invalid))
        } else if let code = Self.match(text, "return-", "") {
            action = .returnStatus(try Self.status(code[...], invalid))
        } else {
            throw invalid
        }
    }

    /// The operations an instruction may name: upload faults only make sense on uploads.
    func applies(to operation: String) -> Bool {
        switch action {
        case .returnStatusAfter, .breakFinalChunk: operation == OperationName.objectsInsert
        default: true
        }
    }

    /// The text between `prefix` and `suffix`, when `text` has both and something between them.
    private static func match(_ text: String, _ prefix: String, _ suffix: String) -> String? {
        guard text.hasPrefix(prefix), text.hasSuffix(suffix), text.utf8.count > prefix.utf8.count + suffix.utf8.count
        else { return nil }
        return String(text.dropFirst(prefix.count).dropLast(suffix.count))
    }

    /// Plain decimal digits, at most 10 of them.
    private static func number(_ text: some StringProtocol) -> Int? {
        guard (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int(text)
    }

    private static func status(_ text: Substring, _ invalid: StorageError) throws -> Int {
        guard let code = number(text), (400...599).contains(code) else { throw invalid }
        return code
    }

    private static func kib(_ text: String, _ invalid: StorageError) throws -> Int64 {
        guard let n = number(text), Int64(n) <= maxKiB else { throw invalid }
        return Int64(n) * 1024
    }
}
