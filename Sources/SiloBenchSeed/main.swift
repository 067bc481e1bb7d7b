// SEEDING ONLY, for bench/run's listing benchmark: fills a Silo data directory with many object rows quickly.
//
// Usage: SiloBenchSeed <metadata.sqlite> <bucket> <template-object-name> <count>
//
// The template is a real object uploaded through `silo serve` beforehand (so its row and its one tiny blob are
// what the server writes). This tool clones that row `count` times in one SQLite transaction, as
// `dNN/objNNNNN` (10,000 names under each `dNN/` prefix, in key order so the B-tree fills sequentially). Every clone
// shares the template's blob. It goes around the store's per-object API on purpose (a million single-row
// transactions with fsync would take hours); it is not a way to create objects and is not used by any test.
@_spi(Testing) import SiloSQLite

#if canImport(Glibc)
import Glibc
#endif

func writeError(_ text: String) { _ = write(2, text, text.utf8.count) }

let arguments = CommandLine.arguments
guard arguments.count == 5, let count = Int(arguments[4]), count > 0, count <= 10_000 * 100 else {
    writeError("usage: SiloBenchSeed <metadata.sqlite> <bucket> <template-object-name> <count ≤ 1000000>\n")
    exit(64)
}

/// SQL string literal: the arguments come from bench/run, but quote them properly anyway.
func literal(_ text: String) -> String {
    "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
}

let columns = """
    bucket, name, generation, metageneration, live, size, md5, crc32c, blob_id, content_type, content_encoding, \
    content_disposition, content_language, cache_control, custom_time, custom_metadata, download_tokens, \
    time_created, updated, component_count
    """
let cloned = """
    t.bucket, CAST(printf('d%02d/obj%05d', s.i / 10000, s.i % 10000) AS BLOB), t.generation + 1 + s.i, \
    t.metageneration, 1, t.size, t.md5, t.crc32c, t.blob_id, t.content_type, t.content_encoding, \
    t.content_disposition, t.content_language, t.cache_control, t.custom_time, t.custom_metadata, t.download_tokens, \
    t.time_created, t.updated, t.component_count
    """
do {
    let store = try SQLiteMetadataStore(path: arguments[1])
    let template =
        "t.bucket = \(literal(arguments[2])) AND t.name = CAST(\(literal(arguments[3])) AS BLOB) AND t.live = 1"
    guard try store.scalar("SELECT count(*) FROM objects t WHERE \(template)") == "1" else {
        writeError("SiloBenchSeed: template object \(arguments[2])/\(arguments[3]) not found\n")
        exit(1)
    }
    try store.executeOnWriter(
        """
        BEGIN IMMEDIATE;
        WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < \(count))
        INSERT INTO objects (\(columns)) SELECT \(cloned) FROM s, objects t WHERE \(template);
        UPDATE counters SET value = (SELECT max(generation) FROM objects) WHERE name = 'last_generation';
        COMMIT;
        """)
    let total = try store.scalar("SELECT count(*) FROM objects") ?? "?"
    print("seeded \(count) object rows; \(total) rows in the store")
} catch {
    writeError("SiloBenchSeed: \(error)\n")
    exit(1)
}
