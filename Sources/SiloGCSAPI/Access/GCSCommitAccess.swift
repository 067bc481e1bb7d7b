package import SiloCore
import SiloServerKit

extension WriteAccess {
    /// The GCS JSON and XML APIs' decision at commit: the caller's `storage.objects.create` and, when a live version
    /// is there to be replaced, `storage.objects.delete` (``GCSAccess/writeRefusal(_:_:replacing:_:)``). The admin
    /// and emulator mode pass unpinned.
    static let gcs = WriteAccess { service, write in
        GCSAccess(service: service).commitCheck(write.bucket, write.name, write.principal)
    }
}

extension GCSAccess {
    /// What a GCS write checks against the live version it would replace (``writeRefusal(_:_:replacing:_:)``); nil
    /// for a caller IAM and ACLs do not apply to (``exempts(_:)``).
    func commitCheck(_ bucket: BucketName, _ name: ObjectName, _ principal: Principal?) -> WriteAccess.Check? {
        if exempts(principal) { return nil }
        return { existing in
            if let refusal = writeRefusal(bucket, name, replacing: existing, principal) { throw refusal }
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
        guard let check = GCSAccess(service: self).commitCheck(bucket, name, principal) else {
            return try write(conditions)
        }
        return try pinned(bucket, name, conditions: conditions, principal: principal, check: check, write: write)
    }
}
