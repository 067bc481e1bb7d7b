import Foundation
import SiloStorage

/// `silo cp`: local → remote, remote → local, remote → remote; `-r` for folders.
struct CopyCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "cp", abstract: "Copy files and objects (local → gs://, gs:// → local, gs:// → gs://).",
            discussion: """
                A DESTINATION ending in '/' (or a bucket root, or an existing local directory) receives each SOURCE
                under its own name; otherwise DESTINATION names the copy. With -r, a folder is copied with everything
                below it. Downloads go through DESTINATION.<generation>.part: running the same cp again after an
                interruption (Ctrl-C) continues where it stopped. A progress bar is shown when stdout is a terminal.
                """,
            options: [
                .flag("recursive", short: "r", help: "copy folders and everything below them"),
                .value("content-type", valueName: "TYPE", help: "content type of uploaded objects"),
                .repeating("metadata", valueName: "KEY=VALUE", help: "custom metadata of uploaded objects"),
            ] + ClientOptions.definitions,
            arguments: [
                ArgumentDefinition("SOURCE", help: "a local path or gs://bucket/path", repeating: true),
                ArgumentDefinition(
                    "DESTINATION", help: "a local path or gs://bucket/path (more SOURCEs may come before it)"),
            ])
    }

    var sources: [String]
    var destination: String
    var recursive: Bool
    var contentType: String?
    var metadata: [String: String]
    var client: ClientOptions

    init(from values: ParsedValues) throws {
        sources = Array(values.positionals.dropLast())
        destination = values.positionals.last ?? ""
        recursive = try values.flag("recursive")
        contentType = values.value("content-type")
        metadata = try KeyValue.parse(values.values("metadata"), option: "--metadata")
        client = try ClientOptions(from: values)
    }

    func validate() throws {
        let remoteDestination = ObjectAddress.isRemote(destination)
        for source in sources where !ObjectAddress.isRemote(source) && !remoteDestination {
            throw ValidationError("cannot copy '\(source)' to '\(destination)': one side must be gs://")
        }
        for source in sources where ObjectAddress.isRemote(source) { _ = try ObjectAddress(parsing: source) }
        if remoteDestination { _ = try ObjectAddress(parsing: destination) }
    }

    /// One planned transfer.
    private enum Transfer {
        case upload(URL, ObjectAddress)
        case download(ObjectAddress, URL)
        case copy(ObjectAddress, ObjectAddress)
    }

    func run(_ context: CommandContext) async throws {
        let connection = ServerConnection(client)
        var transfers: [Transfer] = []
        let many = sources.count > 1
        for source in sources {
            transfers += try await plan(source, many: many, connection: connection)
        }
        for transfer in transfers {
            try Task.checkCancellation()
            switch transfer {
            case .upload(let file, let address): try await upload(file, to: address, connection, context)
            case .download(let address, let file):
                let bar = ProgressBar(sink: context.stdout, label: address.lastComponent, total: -1)
                do {
                    try await connection.download(address, to: file, progress: bar, stderr: context.stderr)
                } catch {
                    bar.abandon()
                    throw error
                }
            case .copy(let from, let to): try await copy(from, to: to, connection, context)
            }
        }
    }

    private func plan(_ source: String, many: Bool, connection: ServerConnection) async throws -> [Transfer] {
        let fm = FileManager.default
        if ObjectAddress.isRemote(source) {
            let from = try ObjectAddress(parsing: source)
            var objects: [(ObjectAddress, String)] = []
            var isFolderCopy = false
            if recursive {
                let root = try connection.reference(ObjectAddress(bucket: from.bucket, path: from.folderPrefix))
                let items = try await Listing.all(under: root, connection: connection, address: from)
                if !items.isEmpty {
                    isFolderCopy = true
                    let prefix = from.folderPrefix
                    objects = items.map {
                        (
                            ObjectAddress(bucket: from.bucket, path: $0.fullPath),
                            String($0.fullPath.dropFirst(prefix.count))
                        )
                    }
                }
            }
            if !isFolderCopy {
                guard !from.isFolder else {
                    throw CommandFailure(recursive ? "no objects under \(from)" : "\(from) is a folder; use cp -r")
                }
                objects = [(from, from.lastComponent)]
            }
            let baseName = isFolderCopy ? from.lastComponent : ""
            return objects.map { object, relative in
                if ObjectAddress.isRemote(destination) {
                    let to = try! ObjectAddress(parsing: destination)
                    let into = to.isFolder || many
                    let name = isFolderCopy ? (into && !baseName.isEmpty ? baseName + "/" : "") + relative : relative
                    return .copy(object, into || isFolderCopy ? to.appending(name) : to)
                }
                let into = destination.hasSuffix("/") || isDirectory(destination) || many
                let name = isFolderCopy ? (into && !baseName.isEmpty ? baseName + "/" : "") + relative : relative
                let file = into || isFolderCopy ? (destination as NSString).appendingPathComponent(name) : destination
                return .download(object, URL(fileURLWithPath: file))
            }
        }
        var isDirectoryFlag: ObjCBool = false
        guard fm.fileExists(atPath: source, isDirectory: &isDirectoryFlag) else {
            throw CommandFailure("no such file or directory: \(source)")
        }
        let to = try ObjectAddress(parsing: destination)
        let into = to.isFolder || many
        if !isDirectoryFlag.boolValue {
            let name = (source as NSString).lastPathComponent
            return [.upload(URL(fileURLWithPath: source), into ? to.appending(name) : to)]
        }
        guard recursive else { throw CommandFailure("\(source) is a directory; use cp -r") }
        let base = (source as NSString).standardizingPath
        let baseName = (base as NSString).lastPathComponent
        guard let walker = fm.enumerator(atPath: base) else { throw CommandFailure("cannot read directory \(source)") }
        var transfers: [Transfer] = []
        var files: [String] = []
        while let relative = walker.nextObject() as? String {
            var flag: ObjCBool = false
            if fm.fileExists(atPath: base + "/" + relative, isDirectory: &flag), !flag.boolValue {
                files.append(relative)
            }
        }
        for relative in files.sorted() {
            let name = into && baseName != "/" && baseName != "." ? baseName + "/" + relative : relative
            transfers.append(.upload(URL(fileURLWithPath: base + "/" + relative), to.appending(name)))
        }
        return transfers
    }

    private func isDirectory(_ path: String) -> Bool {
        var flag: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &flag) && flag.boolValue
    }

    private func uploadMetadata(base: StorageMetadata? = nil) -> StorageMetadata {
        let result = StorageMetadata()
        if let base {
            result.contentType = base.contentType
            result.cacheControl = base.cacheControl
            result.contentDisposition = base.contentDisposition
            result.contentEncoding = base.contentEncoding
            result.contentLanguage = base.contentLanguage
            result.customMetadata = base.customMetadata
        }
        if let contentType { result.contentType = contentType }
        if !metadata.isEmpty { result.customMetadata = (result.customMetadata ?? [:]).merging(metadata) { $1 } }
        return result
    }

    private func upload(
        _ file: URL, to address: ObjectAddress, _ connection: ServerConnection, _ context: CommandContext
    )
        async throws
    {
        let size = LocalFiles.size(of: file.path) ?? -1
        let bar = ProgressBar(sink: context.stdout, label: file.lastPathComponent, total: size)
        let reference = try connection.reference(address)
        let metadata = uploadMetadata()
        do {
            _ = try await connection.run(.write, address) {
                try await reference.putFileAsync(from: file, metadata: metadata) { progress in
                    if let progress {
                        bar.update(completed: progress.completedUnitCount, total: progress.totalUnitCount)
                    }
                }
            }
            bar.finish(completed: max(0, size))
        } catch {
            bar.abandon()
            throw error
        }
    }

    /// Remote → remote: through a temporary file, keeping the source's metadata (flags override it).
    private func copy(
        _ from: ObjectAddress, to: ObjectAddress, _ connection: ServerConnection, _ context: CommandContext
    )
        async throws
    {
        let source = try connection.reference(from)
        let sourceMetadata = try await connection.run(.read, from) { try await source.getMetadata() }
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("silo-cp-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: temporary) }
        let bar = ProgressBar(sink: context.stdout, label: from.lastComponent, total: sourceMetadata.size * 2)
        do {
            _ = try await connection.run(.read, from) {
                try await source.writeAsync(toFile: temporary) { progress in
                    if let progress { bar.update(completed: progress.completedUnitCount) }
                }
            }
            let target = try connection.reference(to)
            let metadata = uploadMetadata(base: sourceMetadata)
            _ = try await connection.run(.write, to) {
                try await target.putFileAsync(from: temporary, metadata: metadata) { progress in
                    if let progress { bar.update(completed: sourceMetadata.size + progress.completedUnitCount) }
                }
            }
            bar.finish()
        } catch {
            bar.abandon()
            throw error
        }
    }
}

/// `KEY=VALUE` arguments.
enum KeyValue {
    static func parse(_ pairs: [String], option: String) throws -> [String: String] {
        var result: [String: String] = [:]
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw ValidationError("\(option) takes KEY=VALUE, not '\(pair)'")
            }
            result[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        return result
    }
}
