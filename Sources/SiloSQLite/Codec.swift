import Foundation
internal import SiloCore
internal import SiloWire

/// Errors SiloSQLite raises itself (not from SQLite).
enum StorageErrorFactory {
    static func newerSchema(path: String, found: Int, known: Int) -> StorageError {
        StorageError(.unavailable, "\(path) has schema version \(found); this Silo knows up to \(known)")
    }

    static func corruptRow(_ what: String, cause: (any Error & Sendable)? = nil) -> StorageError {
        StorageError(.corrupt, "metadata database holds an invalid \(what)", cause: cause)
    }
}

/// Row <-> domain conversions. JSON uses sorted keys so equal values store as equal text; object rows' JSON goes
/// through ``FieldJSON``, session records (read one at a time) through Codable.
enum Codec {
    static let objectColumns = """
        bucket, name, generation, metageneration, size, md5, crc32c, blob_id, content_type, content_encoding, \
        content_disposition, content_language, cache_control, custom_time, custom_metadata, download_tokens, \
        time_created, updated, component_count, extra
        """
    /// `?` for each of `objectColumns` and `live`.
    static let objectPlaceholders = Array(repeating: "?", count: 21).joined(separator: ", ")

    static func objectValues(_ record: ObjectRecord, live: Bool) -> [SQLValue] {
        let fields = record.fields
        return [
            .text(record.bucket.rawValue), .blob(Array(record.name.rawValue.utf8)), .integer(record.generation),
            .integer(record.metageneration), .integer(record.blob.size), .blob(record.blob.md5),
            .integer(Int64(record.blob.crc32c)), .text(record.blobID.rawValue), fields.contentType.sqlValue,
            fields.contentEncoding.sqlValue, fields.contentDisposition.sqlValue, fields.contentLanguage.sqlValue,
            fields.cacheControl.sqlValue, fields.customTime.map { .integer($0.microseconds) } ?? .null,
            .text(StoredFieldJSON.encode(fields.customMetadata)), .text(StoredFieldJSON.encode(fields.downloadTokens)),
            .integer(record.timeCreated.microseconds), .integer(record.updated.microseconds),
            record.componentCount.map { .integer(Int64($0)) } ?? .null, .text(extrasJSON(fields.extras)),
            .integer(live ? 1 : 0),
        ]
    }

    /// The stored form of the GCS-only fields: `{}` when there are none.
    static func extrasJSON(_ extras: ObjectExtras) -> String {
        extras == ObjectExtras() ? "{}" : ((try? json(extras)) ?? "{}")
    }

    static func extras(_ text: String) throws -> ObjectExtras {
        text == "{}" ? ObjectExtras() : try decode(ObjectExtras.self, text)
    }

    /// Decodes a row selected with `objectColumns`.
    static func object(_ row: Statement) throws -> ObjectRecord {
        guard let blobID = BlobID(rawValue: row.text(7)) else { throw StorageErrorFactory.corruptRow("blob id") }
        let fields = ObjectFields(
            contentType: row.optionalText(8), contentEncoding: row.optionalText(9),
            contentDisposition: row.optionalText(10), contentLanguage: row.optionalText(11),
            cacheControl: row.optionalText(12), customTime: row.optionalInt64(13).map(Timestamp.init(microseconds:)),
            customMetadata: try StoredFieldJSON.stringMap(row.textBytes(14), column: "custom_metadata"),
            downloadTokens: try StoredFieldJSON.stringList(row.textBytes(15), column: "download_tokens"),
            extras: try extras(row.text(19)))
        return ObjectRecord(
            bucket: try BucketName(row.text(0)), name: try ObjectName(storedUTF8: row.blob(1)),
            generation: row.int64(2),
            metageneration: row.int64(3),
            blob: BlobSummary(size: row.int64(4), md5: row.blob(5), crc32c: UInt32(truncatingIfNeeded: row.int64(6))),
            blobID: blobID, fields: fields, timeCreated: Timestamp(microseconds: row.int64(16)),
            updated: Timestamp(microseconds: row.int64(17)), componentCount: row.optionalInt64(18).map { Int($0) })
    }

    static let bucketColumns = "name, time_created, updated, metageneration, versioning, resource, generation"

    /// Values for `bucketColumns`, in order.
    static func bucketValues(_ record: BucketRecord) -> [SQLValue] {
        [
            .text(record.name.rawValue), .integer(record.timeCreated.microseconds),
            .integer(record.updated.microseconds), .integer(record.metageneration),
            .integer(record.versioning ? 1 : 0), .text(record.resource), .integer(record.generation),
        ]
    }

    static func bucket(_ row: Statement) throws -> BucketRecord {
        BucketRecord(
            name: try BucketName(row.text(0)), timeCreated: Timestamp(microseconds: row.int64(1)),
            updated: Timestamp(microseconds: row.int64(2)), metageneration: row.int64(3), versioning: row.int64(4) != 0,
            resource: row.text(5), generation: row.int64(6))
    }

    /// Sessions are stored whole as JSON (read and written whole), in ``UploadSession``'s own Codable form, with the
    /// columns queries need beside.
    static func sessionJSON(_ session: UploadSession) throws -> String { try json(session) }

    static let sessionColumns = "id, blob_id, state, updated, record, caller, received"

    /// Values for `sessionColumns`: the whole record as JSON, and the columns queries select sessions by.
    static func sessionValues(_ session: UploadSession) throws -> [SQLValue] {
        [
            .text(session.id), .text(session.blobID.rawValue), .text(session.state.rawValue),
            .integer(session.updated.microseconds), .text(try sessionJSON(session)), session.caller.sqlValue,
            .integer(session.received),
        ]
    }

    static func session(_ text: String) throws -> UploadSession { try decode(UploadSession.self, text) }

    /// Decodes `sequence, kind, object, time, attempts` of the event outbox.
    static func outboxEvent(_ row: Statement) throws -> OutboxEvent {
        guard let kind = StorageEvent.Kind(rawValue: row.text(1)) else {
            throw StorageErrorFactory.corruptRow("event kind")
        }
        let event = StorageEvent(
            kind: kind, object: try decode(ObjectRecord.self, row.text(2)),
            time: Timestamp(microseconds: row.int64(3)))
        return OutboxEvent(sequence: row.int64(0), event: event, attempts: Int(row.int64(4)))
    }

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(text.utf8))
        } catch {
            throw StorageErrorFactory.corruptRow("JSON value", cause: StorageError(.corrupt, "\(error)"))
        }
    }
}
