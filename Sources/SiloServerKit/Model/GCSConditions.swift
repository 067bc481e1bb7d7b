package import SiloCore
package import SiloHTTP

/// Precondition query parameters of the GCS JSON API. Names are matched case-insensitively because the Python
/// client spells one of them `ifMetaGenerationNotMatch`.
package enum GCSConditions {
    package static func destination(_ query: QueryParameters) throws -> Preconditions {
        try parse(query, prefix: "")
    }

    /// `ifSourceGenerationMatch` etc. on copy and rewrite.
    package static func source(_ query: QueryParameters) throws -> Preconditions {
        try parse(query, prefix: "Source")
    }

    private static func parse(_ query: QueryParameters, prefix: String) throws -> Preconditions {
        func value(_ name: String) throws -> Int64? {
            guard let text = query.ignoringCase("if\(prefix)\(name)") else { return nil }
            guard let number = Int64(text), number >= 0 else {
                throw StorageError(
                    .invalidArgument, "if\(prefix)\(name) must be a non-negative integer, not \(text.prefix(40))")
            }
            return number
        }
        return Preconditions(
            ifGenerationMatch: try value("GenerationMatch"), ifGenerationNotMatch: try value("GenerationNotMatch"),
            ifMetagenerationMatch: try value("MetagenerationMatch"),
            ifMetagenerationNotMatch: try value("MetagenerationNotMatch"))
    }

    /// A GCS read: a failed `*Match` is 412, a held `*NotMatch` is 304 (nothing changed for the client).
    package static func checkRead(_ conditions: Preconditions, _ record: ObjectRecord) throws {
        let matches = Preconditions(
            ifGenerationMatch: conditions.ifGenerationMatch, ifMetagenerationMatch: conditions.ifMetagenerationMatch)
        try matches.check(record, describing: "\(record.bucket)/\(record.name)")
        let notMatches = Preconditions(
            ifGenerationNotMatch: conditions.ifGenerationNotMatch,
            ifMetagenerationNotMatch: conditions.ifMetagenerationNotMatch)
        do {
            try notMatches.check(record, describing: "\(record.bucket)/\(record.name)")
        } catch {
            throw StorageError(.notModified, "Not Modified")
        }
    }

    package static func generation(_ query: QueryParameters, _ name: String = "generation") throws -> Int64? {
        guard let text = query[name], !text.isEmpty else { return nil }
        guard let value = Int64(text), value > 0 else {
            throw StorageError(.invalidArgument, "\(name) must be a positive integer, not \(text.prefix(40))")
        }
        return value
    }
}
