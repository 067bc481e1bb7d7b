import Foundation
import SiloStorage

/// One measured `write(toFile:)` for bench/sdk-download.sh:
///
///     SiloBenchSDK <port> <bucket> <object> <output file> <curl|urlsession|default>
///
/// Prints `seconds=<transfer time> bytes=<file size> vmhwm_kib=<peak RSS>`. The time covers the download only
/// (from `write(toFile:)` to its completion), as curl's `%{time_total}` does; the peak RSS is the whole process's.
@main
struct SDKDownloadBench {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 6, let port = Int(arguments[1]) else {
            FileHandle.standardError.write(
                Data("usage: SiloBenchSDK <port> <bucket> <object> <file> <transport>\n".utf8))
            exit(2)
        }
        let transport: any StorageTransport =
            switch arguments[5] {
            case "urlsession": URLSessionStorageTransport()
            #if canImport(SiloCurl)
            case "curl": CurlStorageTransport()
            #endif
            default: Storage.defaultTransport()
            }
        let storage = Storage(url: "gs://\(arguments[2])", transport: transport)
        storage.useEmulator(withHost: "127.0.0.1", port: port)
        let reference = storage.reference(withPath: arguments[3])
        let file = URL(fileURLWithPath: arguments[4])

        let start = ContinuousClock.now
        let written: URL = try await withCheckedThrowingContinuation { continuation in
            _ = reference.write(toFile: file) { continuation.resume(with: $0) }
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let size =
            (try FileManager.default.attributesOfItem(atPath: written.path)[.size] as? NSNumber)?.int64Value ?? -1
        print("seconds=\(seconds) bytes=\(size) vmhwm_kib=\(peakRSSKiB())")
    }

    /// VmHWM from /proc/self/status, in KiB (-1 where there is no procfs).
    static func peakRSSKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
        }
        return -1
    }
}
