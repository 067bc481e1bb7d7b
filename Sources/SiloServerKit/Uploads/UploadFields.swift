package import SiloCore
package import SiloHTTP
package import SiloWire

/// How a v0 upload's metadata is derived when it finalizes.
package enum UploadFields {
    /// Applies the client's metadata to empty fields, then fills the defaults: content type from the JSON, else the
    /// protocol's header type, else `application/octet-stream`; one fresh download token unless the client set
    /// `firebaseStorageDownloadTokens`; an inline content disposition naming the file.
    package static func firebase(_ changes: MetadataChanges?, fallbackContentType: String?, name: ObjectName) throws
        -> ObjectFields
    {
        var fields = ObjectFields()
        try changes?.apply(to: &fields)
        if fields.contentType == nil {
            fields.contentType = fallbackContentType.flatMap { $0.isEmpty ? nil : $0 } ?? "application/octet-stream"
        }
        if changes?.downloadTokens == nil { fields.downloadTokens = [RandomID.uuid()] }
        if fields.contentDisposition == nil {
            fields.contentDisposition = "inline; filename*=utf-8''" + PercentCoding.encodeComponent(name.lastComponent)
        }
        // The fallback type came from a request header.
        try fields.validate()
        return fields
    }

    /// Parses a metadata JSON body; an empty body or JSON `null` means "no metadata", as GCS reads them (Google's
    /// Go libraries send `null` for a copy or rewrite without an object: rclone's server-side copy and moveto).
    package static func parseChanges(_ body: [UInt8]) throws -> MetadataChanges? {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return nil }
        return try changes(JSONValue.parse(body))
    }

    /// A parsed metadata value: `null` is no changes, anything else must be an object.
    package static func changes(_ json: JSONValue) throws -> MetadataChanges? {
        if json == .null { return nil }
        return try MetadataChanges(json: json)
    }

    /// The object name of an upload: the path's, else the `name` query parameter, else the JSON's `name`.
    /// Both given and different is a client bug: 400.
    package static func objectName(pathName: ObjectName?, query: QueryParameters, json: MetadataChanges? = nil) throws
        -> ObjectName
    {
        let queryName = try query["name"].map { try ObjectName($0) }
        if let pathName, let queryName, pathName != queryName {
            throw StorageError(
                .invalidArgument, "object name in the path (\(pathName)) differs from the name parameter (\(queryName))"
            )
        }
        if let name = pathName ?? queryName { return name }
        if let jsonName = json?.name {
            return try ObjectName(jsonName.hasPrefix("/") ? String(jsonName.dropFirst()) : jsonName)
        }
        throw StorageError(.invalidArgument, "upload names no object: give the name in the path or the name parameter")
    }
}
