package import SiloCore
import SiloHTTP

/// The XML API's virtual-host style: `Host: {bucket}.{suffix}` names the bucket, for a suffix the server is
/// configured with (``ServerConfiguration/virtualHostSuffixes``).
package enum VirtualHost {
    /// The bucket `host` names, or nil when it names none (no configured suffix, nothing before it, or no valid
    /// bucket name): then the request is routed by its path alone.
    ///
    /// Every request asks, so an ASCII host (all of them, in practice) is read byte-wise, without lowercasing a
    /// copy or building `"." + suffix` per suffix: that general path cost 5% of the server's CPU on small GETs
    /// (`perf`, bench/profile.sh get). Both paths give the same answer.
    package static func bucket(host: String?, suffixes: [String]) -> BucketName? {
        guard let host, !suffixes.isEmpty, host.utf8.count <= 255 else { return nil }
        let answer = host.utf8.withContiguousStorageIfAvailable { asciiBucket($0, suffixes) } ?? .notASCII
        guard case .bucket(let bucket) = answer else { return generalBucket(host, suffixes) }
        return bucket
    }

    private enum Answer {
        case bucket(BucketName?)
        /// Not all ASCII (or not contiguous): the general path decides.
        case notASCII
    }

    private static func asciiBucket(_ host: UnsafeBufferPointer<UInt8>, _ suffixes: [String]) -> Answer {
        guard host.allSatisfy({ $0 < 0x80 }) else { return .notASCII }
        // Without the port; an IPv6 literal (`[::1]:9199`) names no bucket.
        if host.first == UInt8(ascii: "[") { return .bucket(nil) }
        var end = host.lastIndex(of: UInt8(ascii: ":")) ?? host.count
        if end > 0 && host[end - 1] == UInt8(ascii: ".") { end -= 1 }
        for suffix in suffixes {
            let length = suffix.utf8.count
            // A label, a dot, then the suffix (compared with the host lowercased, as the general path does).
            guard end > length + 1, host[end - length - 1] == UInt8(ascii: ".") else { continue }
            var matches = true
            var index = end - length
            for byte in suffix.utf8 {
                if lowercase(host[index]) != byte {
                    matches = false
                    break
                }
                index += 1
            }
            guard matches else { continue }
            let label = String(decoding: host[0..<(end - length - 1)].lazy.map(lowercase), as: UTF8.self)
            return .bucket(try? BucketName(label))
        }
        return .bucket(nil)
    }

    private static func lowercase(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    /// Any host, by its characters (internal for the test that compares the two paths).
    static func generalBucket(_ host: String, _ suffixes: [String]) -> BucketName? {
        var name = Substring(host)
        if name.hasPrefix("[") { return nil }
        if let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        if name.hasSuffix(".") { name = name.dropLast() }
        let lowered = name.lowercased()
        for suffix in suffixes where lowered.hasSuffix("." + suffix) {
            let label = lowered.dropLast(suffix.count + 1)
            guard !label.isEmpty else { continue }
            return try? BucketName(String(label))
        }
        return nil
    }
}
