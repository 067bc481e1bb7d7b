package import SiloCore
import SiloServerKit

extension WriteAccess {
    /// The GCS JSON and XML APIs' decision at commit: the caller's `storage.objects.create` and, when a live version
    /// is there to be replaced, `storage.objects.delete` (``GCSAccess/writeRefusal(_:_:replacing:_:)``). The admin
    /// and emulator mode pass unpinned.
    static let gcs = WriteAccess { service, write in
        let access = GCSAccess(service: service)
        if access.exempts(write.principal) { return nil }
        return { existing in
            if let refusal = access.writeRefusal(write.bucket, write.name, replacing: existing, write.principal) {
                throw refusal
            }
        }
    }
}

extension ObjectService {
    /// A GCS write (upload, copy, rewrite, compose, multipart completion, restore, move) at its commit: `principal`
    /// must hold `storage.objects.create` and, when a live version is there to be replaced, `storage.objects.delete`
    /// (``GCSAccess/writeRefusal(_:_:replacing:_:)``), decided on the live version read here and pinned into
    /// `write`'s preconditions (``pinned(_:_:conditions:principal:check:write:)``). A version that appears, changes
    /// or goes in between fails the pin in the store's transaction and the decision is made again, so whether the
    /// write replaces something is decided when it commits, not when it started. The admin and emulator mode pass.
    package func gcsPinned<Result>(
        _ bucket: BucketName, _ name: ObjectName, conditions: Preconditions, principal: Principal?,
        write: (Preconditions) throws -> Result
    ) throws -> Result {
        let access = GCSAccess(service: self)
        if access.exempts(principal) { return try write(conditions) }
        return try pinned(bucket, name, conditions: conditions, principal: principal) { existing in
            if let refusal = access.writeRefusal(bucket, name, replacing: existing, principal) { throw refusal }
        } write: {
            try write($0)
        }
    }
}
