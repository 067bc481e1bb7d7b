import SiloCore
package import SiloHTTP

/// What the server takes on trust about how a request reached it: which host names are its own, for what a
/// credential was made for (a signed URL's `host`, a token assertion's `aud`), and which peers may say how a
/// request was addressed before it reached them (`X-Forwarded-Host`, `X-Forwarded-Proto`).
///
/// A request's `Host` is the client's word. A client holding a URL or an assertion made for another deployment that
/// shares a service account key can send any `Host` (or `X-Forwarded-Host`), so neither decides what a credential
/// may name: `Host` counts only when it names the address the connection really reached (its literal IP address and
/// port, or `localhost` on a loopback address — which is what local use with no configuration sends) or one of the
/// operator's public URLs (`--public-url`); the authority adds the configured signing hosts (`--signed-url-host`).
/// Forwarded headers count only from a peer in `--trusted-proxies`, and only for the links and upload URLs a
/// response carries: a proxy forwards the client's `Host` again, so they never widen what a credential may name.
package final class EdgePolicy: Sendable {
    let trustedProxies: [PeerNetwork]
    let publicURLs: [PublicURL]
    let virtualHostSuffixes: [String]

    init(_ configuration: ServerConfiguration) {
        trustedProxies = configuration.trustedProxies
        publicURLs = configuration.publicURLs
        virtualHostSuffixes = configuration.virtualHostSuffixes
    }

    /// Whether `X-Forwarded-*` from this request's peer describe how the client addressed the request.
    func trustsForwarding(_ head: HTTPRequestHead) -> Bool {
        guard !trustedProxies.isEmpty, let peer = head.peer else { return false }
        return trustedProxies.contains { $0.contains(peer) }
    }

    /// `scheme://host[:port]` as the client addressed us: upload URLs and links must use the client's view of the
    /// host (`10.0.2.2` from the Android emulator, a service name in Docker), never the bind address. Behind a
    /// trusted proxy (`--trusted-proxies`), as the proxy says the client addressed it; anyone else's
    /// `X-Forwarded-*` is ignored. (Decided here when a link is made, not stored with every request's context: a
    /// field more in that struct, copied along the inline path, cost a GET 2% more instructions.)
    func externalBase(_ head: HTTPRequestHead) -> String {
        let forwarded = trustsForwarding(head)
        // Served over Silo's own TLS: https, whatever a forwarded X-Forwarded-Proto claims.
        let proxied = forwarded ? head.headers["X-Forwarded-Proto"].map(Self.firstListed) : nil
        let scheme =
            head.isSecure ? "https" : proxied.map { equalsIgnoringCase($0, "https") ? "https" : "http" } ?? "http"
        let host =
            (forwarded ? head.headers["X-Forwarded-Host"].map(Self.firstListed) : nil) ?? head.headers["Host"]
            ?? "127.0.0.1"
        return "\(scheme)://\(host)"
    }

    /// The first of a list a chain of proxies built (`a, b`): the one the client's request arrived with.
    private static func firstListed(_ value: String) -> String {
        var first = value.split(separator: ",", maxSplits: 1).first ?? ""
        while first.first == " " || first.first == "\t" { first = first.dropFirst() }
        while first.last == " " || first.last == "\t" { first = first.dropLast() }
        return String(first)
    }

    /// The hosts a credential presented with `head` may have been made for: its `Host` as sent when that names this
    /// server (``namesThisServer(_:)``), then each public URL's host. Never a forwarded host.
    package func credentialHosts(_ head: HTTPRequestHead) -> [String] {
        var hosts: [String] = []
        if let host = head.headers["Host"], namesThisServer(head) { hosts.append(host) }
        for url in publicURLs {
            for host in url.hosts where !hosts.contains(host) { hosts.append(host) }
        }
        return hosts
    }

    /// Whether the request's `Host` names this server: a public URL's host, or the address and port the connection
    /// reached — its IP literal, or `localhost` when that address is a loopback one; the port may be left out when it
    /// is the scheme's default. A virtual-hosted request's `{bucket}.` is set aside first (`BUCKET.localhost:9199`).
    func namesThisServer(_ head: HTTPRequestHead) -> Bool {
        guard let sent = head.headers["Host"], sent.utf8.count <= 300 else { return false }
        var host = Substring(sent.lowercased())
        if let bucket = VirtualHost.bucket(host: sent, suffixes: virtualHostSuffixes),
            host.hasPrefix(bucket.rawValue + ".")
        {
            host = host.dropFirst(bucket.rawValue.utf8.count + 1)
        }
        if publicURLs.contains(where: { $0.hosts.contains(String(host)) }) { return true }
        guard let local = head.local, let (name, port) = Self.split(host) else { return false }
        guard (port ?? (head.isSecure ? 443 : 80)) == local.port else { return false }
        if name == "localhost" || name == "localhost." { return local.address.isLoopback }
        return PeerAddress(numeric: String(name)) == local.address
    }

    /// `name[:port]` or `[v6]:port` into its parts; nil when it is neither.
    static func split(_ host: Substring) -> (Substring, Int?)? {
        var name = host
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            name = host[host.index(after: host.startIndex)..<close]
            let rest = host[host.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                portText = rest.dropFirst()
            }
        } else if let colon = host.firstIndex(of: ":") {
            name = host[..<colon]
            portText = host[host.index(after: colon)...]
        }
        guard let portText else { return (name, nil) }
        guard (1...5).contains(portText.utf8.count), portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let port = Int(portText)
        else { return nil }
        return (name, port)
    }
}

/// An address clients reach this server at besides the one it listens on (`--public-url`): a reverse proxy, a DNS
/// name, a container's service name. `http://host[:port]` or `https://…`, with no path. Signed URLs made for its
/// host and token assertions whose `aud` is its token endpoint are accepted; links and upload URLs still follow the
/// host each client used.
public struct PublicURL: Sendable, Hashable, CustomStringConvertible {
    public let scheme: String
    /// `host[:port]`, lowercased.
    public let authority: String

    /// Nil unless `text` is `http://` or `https://` and a host (a name, an IPv4 address or a bracketed IPv6 one)
    /// with an optional port, and at most a trailing `/`.
    public init?(_ text: String) {
        let lowered = text.lowercased()
        let scheme = lowered.hasPrefix("https://") ? "https" : lowered.hasPrefix("http://") ? "http" : nil
        guard let scheme else { return nil }
        var authority = lowered.dropFirst(scheme.utf8.count + 3)
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        guard (1...300).contains(authority.utf8.count), let (name, port) = EdgePolicy.split(authority),
            port.map({ (1...65535).contains($0) }) ?? true
        else { return nil }
        let isName = name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count)
                && label.utf8.allSatisfy { $0 == 0x2D || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) }
        }
        guard isName || (authority.hasPrefix("[") && PeerAddress(numeric: String(name)) != nil) else { return nil }
        self.scheme = scheme
        self.authority = String(authority)
    }

    public var description: String { "\(scheme)://\(authority)" }

    /// The host as clients write it in URLs they sign: as given, and without the scheme's default port when it
    /// names it.
    var hosts: [String] {
        let defaultPort = scheme == "https" ? ":443" : ":80"
        guard authority.hasSuffix(defaultPort) else { return [authority] }
        return [authority, String(authority.dropLast(defaultPort.utf8.count))]
    }
}
