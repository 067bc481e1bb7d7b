import SiloCore
import SiloHTTP

/// Where a request goes, decided from the raw (still percent-encoded) path.
enum Route: Equatable {
    /// `GET /`: the emulator probe.
    case probe
    /// `/v0/b/{bucket}/o` (or `/o/`): list, and uploads that name the object in the query.
    case firebaseBucket(BucketName)
    /// `/v0/b/{bucket}/o/{object}`.
    case firebaseObject(BucketName, ObjectName)
    /// `POST /internal/reset` (firebase-tools' conformance hook).
    case internalReset
    case unknown

    /// Splits the raw path on `/` before decoding, decodes each segment exactly once, and joins the object
    /// segments with `/` (so both `a%2Fb` and a hand-built `a/b` name the object `a/b`). Throws `.invalidArgument`
    /// for malformed escapes, invalid UTF-8, or an invalid bucket or object name.
    static func parse(_ rawPath: String) throws -> Route {
        let segments = rawPath.split(separator: "/", omittingEmptySubsequences: false)
        // segments[0] is the empty string before the leading slash.
        guard segments.count >= 2, segments[0].isEmpty else { return .unknown }
        if segments.count == 2 && segments[1].isEmpty { return .probe }
        if segments.count == 3 && segments[1] == "internal" && segments[2] == "reset" { return .internalReset }
        guard segments.count >= 5, segments[1] == "v0", segments[2] == "b", segments[4] == "o" else { return .unknown }
        let bucket = try BucketName(try decode(segments[3]))
        let objectSegments = segments.dropFirst(5)
        if objectSegments.isEmpty || (objectSegments.count == 1 && objectSegments.first!.isEmpty) {
            return .firebaseBucket(bucket)
        }
        let name = try objectSegments.map { try decode($0) }.joined(separator: "/")
        return .firebaseObject(bucket, try ObjectName(name))
    }

    private static func decode(_ segment: Substring) throws -> String {
        guard let decoded = PercentCoding.decodePathComponent(segment) else {
            throw StorageError(
                .invalidArgument, "malformed percent-encoding or invalid UTF-8 in path segment \(segment.prefix(200))")
        }
        return decoded
    }
}
