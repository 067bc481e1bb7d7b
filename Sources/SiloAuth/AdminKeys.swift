import SiloHashing

/// Admin credentials for deployments outside emulator mode (`--admin-key-file FILE`), sent as
/// `Authorization: Bearer <key>`; a match is an admin principal, which skips rules.
///
/// Only SHA-256 digests of the keys are kept, and a presented credential is hashed and compared against every
/// digest in constant time, so neither the comparison time nor a memory dump gives a key away.
public struct AdminKeys: Sendable {
    /// Short keys could be guessed online; 16 characters of a random key are out of reach.
    public static let minimumLength = 16

    private let digests: [[UInt8]]

    /// The number of keys loaded.
    public var count: Int { digests.count }

    public init(keys: [String]) throws(AuthError) {
        guard !keys.isEmpty else { throw AuthError(.invalidConfiguration, "no admin keys were given") }
        for (index, key) in keys.enumerated() {
            guard key.utf8.count >= Self.minimumLength else {
                throw AuthError(
                    .invalidConfiguration,
                    "admin key \(index + 1) is shorter than \(Self.minimumLength) characters")
            }
            // Keys travel in a header and are split from the scheme on whitespace.
            guard key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw AuthError(
                    .invalidConfiguration, "admin key \(index + 1) has characters other than printable ASCII")
            }
        }
        digests = keys.map { SHA256.digest(Array($0.utf8)) }
    }

    /// Reads one key per line from `path`; blank lines and lines starting with `#` are skipped, and surrounding
    /// whitespace is not part of a key.
    public init(contentsOfFile path: String) throws(AuthError) {
        let text = String(decoding: try ConfigurationFile.contents(of: path, what: "the admin key file"), as: UTF8.self)
        let keys = text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: " \t") }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        do {
            try self.init(keys: keys)
        } catch {
            throw AuthError(.invalidConfiguration, "the admin key file '\(path)' is unusable", cause: error)
        }
    }

    /// Whether `credential` is one of the keys.
    public func matches(_ credential: String) -> Bool {
        let digest = SHA256.digest(Array(credential.utf8))
        var found = false
        // No early exit: the time taken does not depend on which key (if any) matched.
        for candidate in digests where ConstantTime.equals(candidate, digest) { found = true }
        return found
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let isTrimmed = { (c: Character) in set.contains(c) }
        guard let start = firstIndex(where: { !isTrimmed($0) }) else { return "" }
        let end = lastIndex(where: { !isTrimmed($0) })!
        return String(self[start...end])
    }
}
