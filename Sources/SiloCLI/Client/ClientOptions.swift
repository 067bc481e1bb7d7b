import Foundation

/// `--endpoint`, `--token` and `--json`, shared by the client commands.
struct ClientOptions: Sendable {
    static let defaultEndpoint = "http://127.0.0.1:9199"

    static let definitions: [OptionDefinition] = [
        .value(
            "endpoint", valueName: "URL", help: "the Silo server", environment: "SILO_ENDPOINT", configurable: true,
            defaultValue: defaultEndpoint),
        .value(
            "token", valueName: "TOKEN", help: "ID token sent as 'Authorization: Firebase TOKEN'",
            environment: "SILO_TOKEN", configurable: true),
        .value(
            "ca-file", valueName: "FILE",
            help:
                "for an https:// endpoint: trust the certificate authorities in this PEM file instead of the system's (default: SSL_CERT_FILE)",
            environment: "SILO_CA_FILE", configurable: true),
    ]

    static let json: OptionDefinition = .flag("json", help: "print machine-readable JSON")

    var endpoint: Endpoint
    var token: String?
    /// `--ca-file`: the CA bundle an https endpoint is verified with; nil: SSL_CERT_FILE, else the system's.
    var trustedCertificatesFile: String?

    init(from values: ParsedValues) throws {
        endpoint = try Endpoint(parsing: values.value("endpoint") ?? Self.defaultEndpoint)
        token = values.value("token")
        trustedCertificatesFile = values.value("ca-file")
    }
}

/// `http://host:port` or `https://host:port` of the server (https for a Silo served with `--tls-cert`). The SDK
/// speaks to Silo the way it speaks to the Firebase emulator.
struct Endpoint: Sendable, Equatable, CustomStringConvertible {
    var host: String
    var port: Int
    var secure = false

    init(parsing text: String) throws {
        var rest = Substring(text)
        if rest.hasPrefix("http://") {
            rest = rest.dropFirst(7)
        } else if rest.hasPrefix("https://") {
            rest = rest.dropFirst(8)
            secure = true
        } else if rest.contains("://") {
            throw ValidationError("--endpoint must be an http:// or https:// URL, not '\(text)'")
        }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        var hostPart = rest
        var port = secure ? 443 : 80
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()) else { throw ValidationError("bad port in --endpoint '\(text)'") }
                port = p
            }
        } else if let colon = rest.lastIndex(of: ":") {
            hostPart = rest[..<colon]
            guard let p = Int(rest[rest.index(after: colon)...]) else {
                throw ValidationError("bad port in --endpoint '\(text)'")
            }
            port = p
        }
        guard !hostPart.isEmpty, !hostPart.contains("/"), (0...65535).contains(port) else {
            throw ValidationError("--endpoint must look like http://HOST:PORT, not '\(text)'")
        }
        self.host = String(hostPart)
        self.port = port
    }

    var base: String {
        let scheme = secure ? "https" : "http"
        return host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
    }
    var description: String { base }
}
