/// The stored form of an object version where a store keeps one whole as JSON (the event outbox of SQLite and
/// PostgreSQL): names and ids as strings, the MD5 digest in base64. Decoding validates names and ids, so a damaged
/// record fails loudly.
extension ObjectRecord: Codable {
    private enum CodingKeys: String, CodingKey {
        case bucket, name, generation, metageneration, size, md5, crc32c, blobID, fields, timeCreated, updated
        case componentCount
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let blobID = BlobID(rawValue: try c.decode(String.self, forKey: .blobID)) else {
            throw DecodingError.dataCorruptedError(forKey: .blobID, in: c, debugDescription: "not a blob id")
        }
        guard let md5 = Base64.decode(try c.decode(String.self, forKey: .md5)) else {
            throw DecodingError.dataCorruptedError(forKey: .md5, in: c, debugDescription: "not base64")
        }
        self.init(
            bucket: try BucketName(c.decode(String.self, forKey: .bucket)),
            name: try ObjectName(stored: c.decode(String.self, forKey: .name)),
            generation: try c.decode(Int64.self, forKey: .generation),
            metageneration: try c.decode(Int64.self, forKey: .metageneration),
            blob: BlobSummary(
                size: try c.decode(Int64.self, forKey: .size), md5: md5,
                crc32c: try c.decode(UInt32.self, forKey: .crc32c)),
            blobID: blobID, fields: try c.decode(ObjectFields.self, forKey: .fields),
            timeCreated: try c.decode(Timestamp.self, forKey: .timeCreated),
            updated: try c.decode(Timestamp.self, forKey: .updated),
            componentCount: try c.decodeIfPresent(Int.self, forKey: .componentCount))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(bucket.rawValue, forKey: .bucket)
        try c.encode(name.rawValue, forKey: .name)
        try c.encode(generation, forKey: .generation)
        try c.encode(metageneration, forKey: .metageneration)
        try c.encode(blob.size, forKey: .size)
        try c.encode(Base64.encode(blob.md5), forKey: .md5)
        try c.encode(blob.crc32c, forKey: .crc32c)
        try c.encode(blobID.rawValue, forKey: .blobID)
        try c.encode(fields, forKey: .fields)
        try c.encode(timeCreated, forKey: .timeCreated)
        try c.encode(updated, forKey: .updated)
        try c.encodeIfPresent(componentCount, forKey: .componentCount)
    }
}
