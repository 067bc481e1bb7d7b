import SiloConsole
public import SiloCore
import SiloFirebaseAPI
import SiloGCSAPI
public import SiloServerKit
import SiloThumbnails

extension SiloServerApp {
    /// Every API Silo serves, in the order the pipeline asks them: v0 first (the SDKs' traffic), then GCS's JSON and
    /// XML APIs, then the console.
    package static let apis: [any RouteGroup.Type] = [
        FirebaseRouteGroup.self, GCSRouteGroup.self, ConsoleRouteGroup.self,
    ]

    /// The server as it ships, over the given stores: every API (``apis``), and thumbnails (``ImageService``).
    /// `credentials` turns `Authorization` headers into principals; the executable chooses it (the server knows no
    /// token format of its own).
    public convenience init(
        configuration: ServerConfiguration, metadata: any MetadataStore, blobs: any BlobStore,
        policy: any AccessPolicy = AllowAllPolicy(), credentials: any CredentialVerifier, logger: Logger,
        observability: Observability = Observability()
    ) {
        self.init(
            configuration: configuration, metadata: metadata, blobs: blobs, policy: policy, credentials: credentials,
            logger: logger, observability: observability, apis: Self.apis,
            thumbnails: { ImageService(settings: $0, logger: $1) })
    }

    /// The same server with other APIs (a test of the composition: a group of its own beside the shipped ones).
    package convenience init(
        configuration: ServerConfiguration, metadata: any MetadataStore, blobs: any BlobStore,
        credentials: any CredentialVerifier, logger: Logger, apis: [any RouteGroup.Type]
    ) {
        self.init(
            configuration: configuration, metadata: metadata, blobs: blobs, credentials: credentials, logger: logger,
            apis: apis, thumbnails: { ImageService(settings: $0, logger: $1) })
    }
}
