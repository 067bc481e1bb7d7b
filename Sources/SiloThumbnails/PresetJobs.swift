import SiloCore
import SiloHashing
import SiloServerKit
import SiloWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Preset jobs on disk, so that a stop or a crash between an upload and its thumbnails does not lose them: one small
/// file per job naming the version it is for, saved before the upload answers and deleted once the job has run.
/// The jobs a previous run left are read when the directory is opened, before this run queues any, and run again
/// at startup (``ObjectService/resumeThumbnailPresets()``).
package final class PresetJobFiles: Sendable {
    /// What a job needs to find its work again: the version it was queued for, by its generation, or (saved before
    /// the upload's commit, when the generation is not known yet) by its blob.
    struct Job: Sendable, Equatable {
        /// How a job names its version: by generation once committed, by the bytes' blob before.
        enum Version: Sendable, Equatable {
            case generation(Int64)
            case blob(BlobID)
        }

        let bucket: BucketName
        let name: ObjectName
        let version: Version

        init(bucket: BucketName, name: ObjectName, version: Version) {
            self.bucket = bucket
            self.name = name
            self.version = version
        }

        init(_ record: ObjectRecord) {
            self.init(bucket: record.bucket, name: record.name, version: .generation(record.generation))
        }

        /// Whether `live` is the version this job was queued for.
        func names(_ live: ObjectRecord) -> Bool {
            switch version {
            case .generation(let generation): live.generation == generation
            case .blob(let blob): live.blobID == blob
            }
        }

        /// Named by the version, so saving the same job twice leaves one file.
        var fileName: String {
            let version =
                switch version {
                case .generation(let generation): String(generation)
                case .blob(let blob): "blob:" + blob.rawValue
                }
            let digest = SHA256.digest("\(bucket)\u{0}\(name.rawValue)\u{0}\(version)".utf8)
            let hex = Array("0123456789abcdef".utf8)
            return String(decoding: digest.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] }, as: UTF8.self) + ".job"
        }
    }

    let directory: String
    /// The jobs the previous run left, oldest version first (those named by blob last: they were committing when the
    /// previous run stopped).
    let leftover: [(file: String, job: Job)]

    /// Creates `directory` if needed, deletes the temporary files of saves a crash cut short (their uploads never
    /// answered) and reads the jobs left; a file that does not parse is deleted and logged.
    init(directory: String, logger: Logger) throws {
        self.directory = directory
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw StorageError(.ioError, "cannot create the preset job directory \(directory): errno \(errno)")
        }
        guard let dir = opendir(directory) else {
            throw StorageError(.ioError, "cannot read the preset job directory \(directory): errno \(errno)")
        }
        var names: [String] = []
        while let entry = readdir(dir) {
            names.append(
                withUnsafeBytes(of: entry.pointee.d_name) {
                    String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
                })
        }
        closedir(dir)
        var found: [(file: String, job: Job)] = []
        for name in names {
            if name.hasSuffix(".tmp") {
                unlink(directory + "/" + name)
            } else if name.hasSuffix(".job") {
                guard let job = Self.load(directory + "/" + name) else {
                    logger.warning("preset job file unreadable, deleted", metadata: ["silo.file": name])
                    unlink(directory + "/" + name)
                    continue
                }
                found.append((name, job))
            }
        }
        leftover = found.sorted { Self.runsBefore($0.job, $1.job) }
    }

    /// Saves `job` for good before returning: a temporary file, fsync, rename, then an fsync of the directory so
    /// the new name survives a power loss too. Returns the file's name.
    func save(_ job: Job) throws -> String {
        var object: JSONObject = ["bucket": .string(job.bucket.rawValue), "name": .string(job.name.rawValue)]
        switch job.version {
        case .generation(let generation): object["generation"] = .string(String(generation))
        case .blob(let blob): object["blob"] = .string(blob.rawValue)
        }
        let file = job.fileName
        let path = directory + "/" + file
        let temporary = path + ".\(UInt32.random(in: 0...UInt32.max)).tmp"
        guard createFile(temporary, JSONValue.object(object).serialized(), durable: true), rename(temporary, path) == 0
        else {
            let code = errno
            unlink(temporary)
            throw StorageError(.ioError, "cannot save a preset job in \(directory): errno \(code)")
        }
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw StorageError(.ioError, "cannot open \(directory): errno \(errno)") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw StorageError(.ioError, "cannot fsync \(directory): errno \(errno)") }
        return file
    }

    /// Deletes a job's file once it has run. No fsync: a job a power loss brings back runs again and finds its
    /// thumbnails written (the preset skips each one written from that version).
    func remove(_ file: String) { unlink(directory + "/" + file) }

    private static func runsBefore(_ a: Job, _ b: Job) -> Bool {
        switch (a.version, b.version) {
        case (.generation(let x), .generation(let y)): x < y
        case (.generation, .blob): true
        case (.blob, _): false
        }
    }

    private static func load(_ path: String) -> Job? {
        // A job is a few hundred bytes (an object name is at most 1024, escaped at most six times over).
        guard let bytes = readSmallFile(path, limit: 16 << 10),
            let object = try? JSONValue.parse(bytes[...]).objectValue,
            let bucket = object["bucket"]?.stringValue.flatMap({ try? BucketName($0) }),
            let name = object["name"]?.stringValue.flatMap({ try? ObjectName($0) })
        else { return nil }
        // A blob wins over a generation (a job saved before its commit may carry "generation": "0" as well).
        if let text = object["blob"]?.stringValue {
            guard let blob = BlobID(rawValue: text) else { return nil }
            return Job(bucket: bucket, name: name, version: .blob(blob))
        }
        guard let generation = object["generation"]?.int64Value, generation > 0 else { return nil }
        return Job(bucket: bucket, name: name, version: .generation(generation))
    }
}
