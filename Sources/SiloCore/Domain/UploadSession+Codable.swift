/// The stored form of a session, shared by every metadata store that keeps sessions as one JSON record (SQLite,
/// PostgreSQL): names and ids as strings, optional fields omitted when absent, `api` defaulting to `firebase` for
/// records written before it existed. Decoding validates names and ids, so a damaged record fails loudly.
///
/// Who started the session is `starter`, the principal without its credential. Records written before that kept the
/// raw `Authorization` header as `principal`; the stores' migrations drop it, and fail the active sessions that held
/// one, since their starter cannot be known without it. A record that still holds one (written by an older node
/// beside a migrated database) decodes the same way: failed, never committed as someone else.
extension UploadSession: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, bucket, name, fields, declaredSize, received, blobID, state, conditions, starter
        case resultGeneration, failureStatus, failureMessage, expectedMD5, expectedCRC32C, created, updated, api
        case caller, part
        /// The raw credential records kept before `starter`: read only to refuse the session, never written.
        case legacyCredential = "principal"
    }

    /// What a session that kept its starter's credential answers (status and message), here and in the migrations.
    public static let credentialDropped = (
        status: 410,
        message: "This upload session was started by an older Silo that kept the caller's credential; "
            + "it cannot be finished. Start the upload again."
    )

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let blobID = BlobID(rawValue: try c.decode(String.self, forKey: .blobID)) else {
            throw DecodingError.dataCorruptedError(forKey: .blobID, in: c, debugDescription: "not a blob id")
        }
        self.init(
            id: try c.decode(String.self, forKey: .id), bucket: try BucketName(c.decode(String.self, forKey: .bucket)),
            name: try ObjectName(stored: c.decode(String.self, forKey: .name)),
            fields: try c.decode(ObjectFields.self, forKey: .fields),
            declaredSize: try c.decodeIfPresent(Int64.self, forKey: .declaredSize), blobID: blobID,
            conditions: try c.decode(Preconditions.self, forKey: .conditions),
            starter: try c.decodeIfPresent(Principal.self, forKey: .starter),
            created: try c.decode(Timestamp.self, forKey: .created),
            api: try c.decodeIfPresent(API.self, forKey: .api) ?? .firebase)
        received = try c.decode(Int64.self, forKey: .received)
        state = try c.decode(State.self, forKey: .state)
        resultGeneration = try c.decodeIfPresent(Int64.self, forKey: .resultGeneration)
        failureStatus = try c.decodeIfPresent(Int.self, forKey: .failureStatus)
        failureMessage = try c.decodeIfPresent(String.self, forKey: .failureMessage)
        expectedMD5 = try c.decodeIfPresent(String.self, forKey: .expectedMD5)
        expectedCRC32C = try c.decodeIfPresent(String.self, forKey: .expectedCRC32C)
        updated = try c.decode(Timestamp.self, forKey: .updated)
        caller = try c.decodeIfPresent(String.self, forKey: .caller)
        part = try c.decodeIfPresent(UploadPart.self, forKey: .part)
        if c.contains(.legacyCredential), state == .active {
            state = .failed
            failureStatus = Self.credentialDropped.status
            failureMessage = Self.credentialDropped.message
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(bucket.rawValue, forKey: .bucket)
        try c.encode(name.rawValue, forKey: .name)
        try c.encode(fields, forKey: .fields)
        try c.encodeIfPresent(declaredSize, forKey: .declaredSize)
        try c.encode(received, forKey: .received)
        try c.encode(blobID.rawValue, forKey: .blobID)
        try c.encode(state, forKey: .state)
        try c.encode(conditions, forKey: .conditions)
        try c.encodeIfPresent(starter, forKey: .starter)
        try c.encodeIfPresent(resultGeneration, forKey: .resultGeneration)
        try c.encodeIfPresent(failureStatus, forKey: .failureStatus)
        try c.encodeIfPresent(failureMessage, forKey: .failureMessage)
        try c.encodeIfPresent(expectedMD5, forKey: .expectedMD5)
        try c.encodeIfPresent(expectedCRC32C, forKey: .expectedCRC32C)
        try c.encode(created, forKey: .created)
        try c.encode(updated, forKey: .updated)
        try c.encode(api, forKey: .api)
        try c.encodeIfPresent(caller, forKey: .caller)
        try c.encodeIfPresent(part, forKey: .part)
    }
}
