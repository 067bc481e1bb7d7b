import SiloCore
import SiloHTTP

/// The XML API's virtual-host style: `Host: {bucket}.{suffix}` names the bucket, for a suffix the server is
/// configured with (``ServerConfiguration/virtualHostSuffixes``).
enum VirtualHost {
    /// The bucket `host` names, or nil when it names none (no configured suffix, nothing before it, or no valid
    /// bucket name): then the request is routed by its path alone.
    static func bucket(host: String?, suffixes: [String]) -> BucketName? {
        guard let host, !suffixes.isEmpty, host.utf8.count <= 255 else { return nil }
        // Without the port; an IPv6 literal (`[::1]:9199`) names no bucket.
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
