internal import CLibPQ
internal import SiloCore

/// What `--metadata postgres://…` names: a libpq connection URI (or `key=value` connection string), plus Silo's
/// own `pool_size` query parameter, which is taken out before libpq sees it (libpq rejects parameters it does not
/// know).
struct PostgresURL {
    /// The text handed to `PQconnectdb`.
    var conninfo: String
    var poolSize: Int?

    init(_ text: String) throws {
        conninfo = text
        let isURI = text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
        if isURI, let questionMark = text.firstIndex(of: "?") {
            var kept: [Substring] = []
            for parameter in text[text.index(after: questionMark)...].split(separator: "&") {
                guard parameter.hasPrefix("pool_size=") else {
                    kept.append(parameter)
                    continue
                }
                guard let size = Int(parameter.dropFirst("pool_size=".count)), size > 0 else {
                    throw StorageError(.invalidArgument, "pool_size in a PostgreSQL URL must be a positive integer")
                }
                poolSize = size
            }
            let base = text[..<questionMark]
            conninfo = kept.isEmpty ? String(base) : base + "?" + kept.joined(separator: "&")
        }
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            if let message { PQfreemem(message) }
            // libpq's message may quote part of the text, which can hold a password: it is not repeated.
            throw StorageError(.invalidArgument, "not a valid PostgreSQL URL (postgres://user@host:port/database)")
        }
        PQconninfoFree(options)
    }
}
