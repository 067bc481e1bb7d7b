import Foundation
internal import SiloCore
internal import SiloWire

/// Row <-> domain conversions. The shapes match SiloSQLite's, so a row means the same in either store: object
/// names as bytes, times as microseconds, custom metadata and download tokens as compact JSON text with sorted
/// keys (through SiloWire's writer and parser), and upload sessions whole as one JSON record.
enum Codec {
    static let objectColumns = """
        bucket, name, generation, metageneration, size, md5, crc32c, blob_id, content_type, content_encoding, \
        content_disposition, content_language, cache_control, custom_time, custom_metadata, download_tokens, \
        time_created, updated, component_count, extra
        """
    /// `$1, $2, …` for each of `objectColumns` and `live`.
    static let objectPlaceholders = (1...21).map { "$\($0)" }.joined(separator: ", ")

    /// Values for `objectColumns` followed by `live`.
    static func objectValues(_ record: ObjectRecord, live: Bool) -> [Value] {
        let fields = record.fields
        return [
            .text(record.bucket.rawValue), .bytes(Array(record.name.rawValue.utf8)), .int64(record.generation),
            .int64(record.metageneration), .int64(record.blob.size), .bytes(record.blob.md5),
            .int64(Int64(record.blob.crc32c)), .text(record.blobID.rawValue), fields.contentType.value,
            fields.contentEncoding.value, fields.contentDisposition.value, fields.contentLanguage.value,
            fields.cacheControl.value, fields.customTime.map { .int64($0.microseconds) } ?? .null,
            .text(StoredFieldJSON.encode(fields.customMetadata)), .text(StoredFieldJSON.encode(fields.downloadTokens)),
            .int64(record.timeCreated.microseconds), .int64(record.updated.microseconds),
            record.componentCount.map { .int64(Int64($0)) } ?? .null, .text(extrasJSON(fields.extras)), .bool(live),
        ]
    }

    /// The stored form of the GCS-only fields: `{}` when there are none (the same text SiloSQLite stores).
    static func extrasJSON(_ extras: ObjectExtras) -> String {
        guard extras != ObjectExtras() else { return "{}" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(extras)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    static func extras(_ text: String) throws -> ObjectExtras {
        guard text != "{}" else { return ObjectExtras() }
        do { return try JSONDecoder().decode(ObjectExtras.self, from: Data(text.utf8)) } catch {
            throw StorageErrorFactory.corruptRow("extra JSON", cause: StorageError(.corrupt, "\(error)"))
        }
    }

    /// Decodes a row selected with `objectColumns`.
    static func object(_ row: Row) throws -> ObjectRecord {
        guard let blobID = BlobID(rawValue: row.text(7)) else { throw StorageErrorFactory.corruptRow("blob id") }
        let fields = ObjectFields(
            contentType: row.optionalText(8), contentEncoding: row.optionalText(9),
            contentDisposition: row.optionalText(10), contentLanguage: row.optionalText(11),
            cacheControl: row.optionalText(12),
            customTime: try row.optionalInt64(13).map(Timestamp.init(microseconds:)),
            customMetadata: try StoredFieldJSON.stringMap(row.bytes(14), column: "custom_metadata"),
            downloadTokens: try StoredFieldJSON.stringList(row.bytes(15), column: "download_tokens"),
            extras: try extras(row.text(19)))
        return ObjectRecord(
            bucket: try BucketName(row.text(0)), name: try ObjectName(storedUTF8: row.bytes(1)),
            generation: try row.int64(2), metageneration: try row.int64(3),
            blob: BlobSummary(
                size: try row.int64(4), md5: row.bytes(5), crc32c: UInt32(truncatingIfNeeded: try row.int64(6))),
            blobID: blobID, fields: fields, timeCreated: Timestamp(microseconds: try row.int64(16)),
            updated: Timestamp(microseconds: try row.int64(17)),
            componentCount: try row.optionalInt64(18).map { Int($0) })
    }

    static let bucketColumns = "name, time_created, updated, metageneration, versioning, resource, generation"

    /// Values for `bucketColumns`, in order.
    static func bucketValues(_ record: BucketRecord) -> [Value] {
        [
            .text(record.name.rawValue), .int64(record.timeCreated.microseconds), .int64(record.updated.microseconds),
            .int64(record.metageneration), .bool(record.versioning), .text(record.resource), .int64(record.generation),
        ]
    }

    static func bucket(_ row: Row) throws -> BucketRecord {
        BucketRecord(
            name: try BucketName(row.text(0)), timeCreated: Timestamp(microseconds: try row.int64(1)),
            updated: Timestamp(microseconds: try row.int64(2)), metageneration: try row.int64(3),
            versioning: try row.bool(4), resource: row.text(5), generation: try row.int64(6))
    }

    static func blobID(_ row: Row) throws -> BlobID {
        guard let id = BlobID(rawValue: row.text(0)) else { throw StorageErrorFactory.corruptRow("blob id") }
        return id
    }

    // MARK: Upload sessions

    /// Sessions are stored whole as JSON (read and written whole) in ``UploadSession``'s own Codable form — the
    /// same records SiloSQLite writes.
    static func sessionJSON(_ session: UploadSession) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(session), as: UTF8.self)
    }

    static let sessionColumns = "id, blob_id, state, updated, record, caller, received"

    /// Values for `sessionColumns`: the whole record as JSON, and the columns queries select sessions by.
    static func sessionValues(_ session: UploadSession) throws -> [Value] {
        [
            .text(session.id), .text(session.blobID.rawValue), .text(session.state.rawValue),
            .int64(session.updated.microseconds), .text(try sessionJSON(session)), session.caller.value,
            .int64(session.received),
        ]
    }

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Decodes `sequence, kind, object, time, attempts` of the event outbox.
    static func outboxEvent(_ row: Row) throws -> OutboxEvent {
        guard let kind = StorageEvent.Kind(rawValue: row.text(1)) else {
            throw StorageErrorFactory.corruptRow("event kind")
        }
        let object: ObjectRecord
        do {
            object = try JSONDecoder().decode(ObjectRecord.self, from: Data(row.bytes(2)))
        } catch {
            throw StorageErrorFactory.corruptRow("outbox event JSON", cause: StorageError(.corrupt, "\(error)"))
        }
        let event = StorageEvent(kind: kind, object: object, time: Timestamp(microseconds: try row.int64(3)))
        return OutboxEvent(sequence: try row.int64(0), event: event, attempts: Int(try row.int64(4)))
    }

    static func session(_ row: Row) throws -> UploadSession {
        do {
            return try JSONDecoder().decode(UploadSession.self, from: Data(row.bytes(0)))
        } catch {
            throw StorageErrorFactory.corruptRow("upload session JSON", cause: StorageError(.corrupt, "\(error)"))
        }
    }
}
