import Foundation
import SiloCore
import SiloRules
import SiloStorage
import SiloTestStores
import SiloTesting
import Synchronization
import Testing

/// The project FirebaseStorage's own integration tests (firebase-ios-sdk FirebaseStorage/Tests/Integration) run
/// against, rebuilt on a live Silo: its bucket, its security rules (loaded into the server, as `silo serve --rules`
/// does), a signed-in user, and the objects its shared setUp uploads through the SDK as that user. One server for
/// the whole run, started on first use; each test makes its own `Storage` on it, so settings a test changes
/// (`callbackQueue`, `uploadChunkSizeBytes`) stay in that test.
/// `@unchecked Sendable`: its only state is the running server, which is never replaced and serves any thread.
final class FirebaseProject: @unchecked Sendable {
    static let bucket = "ios-opensource-samples.appspot.com"

    /// Firebase's rules for its test project, `match /{directChild=*}` (a single-segment wildcard) as Firebase writes
    /// it.
    static let rules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /{directChild=*} {
              allow read: if request.auth != null;
            }
            match /ios {
              match /public/{allPaths=**} {
                allow write: if request.auth != null;
                allow read: if true;
              }
              match /private/{allPaths=**} {
                allow read, write: if false;
              }
            }
          }
        }
        """

    /// The setUp's objects: two of 1 MiB and four empty ones.
    static let largeFiles = ["ios/public/1mb", "ios/public/1mb2"]
    static let emptyFiles = ["ios/public/empty", "ios/public/list/a", "ios/public/list/b", "ios/public/list/prefix/c"]

    /// Firebase's test resource `1mb.dat` is 1 MiB of bytes; these are deterministic ones of that size.
    static let oneMiB = pattern(1 << 20, seed: 1)

    let server: TestServer
    var port: Int { server.port }

    private static let shared = Mutex<Task<FirebaseProject, any Error>?>(nil)

    /// The project, set up once per test process.
    static func get() async throws -> FirebaseProject {
        let task = shared.withLock { task in
            if let task { return task }
            let made = Task { try await FirebaseProject() }
            task = made
            return made
        }
        return try await task.value
    }

    private init() async throws {
        let program = try RulesProgram.compile(source: Self.rules, fileName: "storage.rules")
        server = try TestServer(policy: RulesAccessPolicy(program: program))
        let storage = makeStorage()
        // As the setUp does: every object uploaded by the signed-in user with putData's Result form.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (name, data) in Self.largeFiles.map({ ($0, Self.oneMiB) }) + Self.emptyFiles.map({ ($0, Data()) }) {
                group.addTask {
                    let result = await completion {
                        (done: @escaping @Sendable (Result<StorageMetadata, any Error>) -> Void) in
                        storage.reference().child(name).putData(data, completion: done)
                    }
                    _ = try result.get()
                }
            }
            try await group.waitForAll()
        }
    }

    /// A `Storage` for the project's bucket on this server, signed in as the tests' user (Firebase: Storage.storage
    /// after Auth.signIn; here an emulator ID token, which the test server accepts unsigned).
    /// `paced`: response bodies arrive at most ~16 MB/s, about a phone's network, so that a pause a test hands to
    /// another queue lands before the last byte, as it does against Firebase (on loopback 1 MiB takes ~3 ms).
    func makeStorage(signedIn: Bool = true, paced: Bool = false) -> Storage {
        let token = Self.userToken
        let provider: Storage.IDTokenProvider? = signedIn ? { @Sendable () async throws -> String? in token } : nil
        let transport = paced ? PacedTransport(testTransport()) : testTransport()
        let storage = Storage(url: "gs://\(Self.bucket)", idTokenProvider: provider, transport: transport)
        storage.useEmulator(withHost: "127.0.0.1", port: port)
        return storage
    }

    /// An unsigned ID token (`alg: none`) for the user `ios-integration-user`.
    static let userToken: String = {
        func encode(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let now = Int(Date().timeIntervalSince1970)
        let claims =
            #"{"iss":"https://securetoken.google.com/ios-opensource-samples","aud":"ios-opensource-samples","#
            + #""sub":"ios-integration-user","user_id":"ios-integration-user","iat":\#(now - 10),"#
            + #""auth_time":\#(now - 10),"exp":\#(now + 3600)}"#
        return encode(#"{"alg":"none","typ":"JWT"}"#) + "." + encode(claims) + "."
    }()
}

/// Passes everything through but sleeps 1 ms per 16 KiB of response body.
final class PacedTransport: StorageTransport {
    let inner: any StorageTransport
    init(_ inner: any StorageTransport) { self.inner = inner }

    func stream(
        _ request: StorageHTTPRequest, timeout: TimeInterval, receiver: any StorageResponseReceiver,
        sent: (@Sendable (Int64) -> Void)?
    ) async throws {
        try await inner.stream(request, timeout: timeout, receiver: Paced(receiver), sent: sent)
    }

    private struct Paced: StorageResponseReceiver {
        let receiver: any StorageResponseReceiver
        init(_ receiver: any StorageResponseReceiver) { self.receiver = receiver }
        func receive(head: StorageHTTPResponseHead) throws { try receiver.receive(head: head) }
        func receive(body chunk: Data) throws {
            Thread.sleep(forTimeInterval: 0.001 * Double(max(1, chunk.count / (16 * 1024))))
            try receiver.receive(body: chunk)
        }
    }
}

/// Runs an API that reports through a completion handler and returns what it reported (the tests' XCTest
/// expectations, as an `await`).
func completion<T: Sendable>(_ start: (@escaping @Sendable (T) -> Void) -> Void) async -> T {
    await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        let once = Mutex(false)
        start { value in
            let first = once.withLock { done in
                defer { done = true }
                return !done
            }
            if first { continuation.resume(returning: value) } else { Issue.record("completion called again") }
        }
    }
}

/// A fresh directory for a test's local files (Firebase's tests share NSTemporaryDirectory() because they run one
/// at a time; these may run beside other suites).
func scratchDirectory() throws -> URL {
    let url = temporaryFile("firebase-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// `"Hello Swift World"`, the tests' small payload.
let helloData = Data("Hello Swift World".utf8)

/// Whether two payloads are equal. `#expect(a == b)` on large `Data` would, when it fails, compute a byte-wise
/// collection difference that takes minutes for a MiB; a plain Bool fails at once.
func same(_ a: Data, _ b: Data) -> Bool { a == b }
