import Foundation
import SiloStorage
import SiloTesting
import Synchronization
import Testing

extension FirebaseIntegrationTests {
    /// Firebase's `StorageAsyncAwait`: the async forms, which throw `StorageError`.
    @Suite struct StorageAsyncAwait {
        let project: FirebaseProject
        let storage: Storage

        init() async throws {
            project = try await FirebaseProject.get()
            storage = project.makeStorage()
        }

        @Test func testGetMetadata() async throws {
            let ref = storage.reference().child("ios/public/1mb2")
            let result = try await ref.getMetadata()
            #expect(result.size == 1 << 20)
        }

        @Test func testUpdateMetadata() async throws {
            let meta = StorageMetadata()
            meta.contentType = "lol/custom"
            meta.customMetadata = ["lol": "custom metadata is neat", "ちかてつ": "🚇", "shinkansen": "新幹線"]
            let ref = storage.reference(withPath: "ios/public/1mb2")
            let metadata = try await ref.updateMetadata(meta)
            #expect(meta.contentType == metadata.contentType)
            #expect(meta.customMetadata!["lol"] == metadata.customMetadata!["lol"])
            #expect(meta.customMetadata!["ちかてつ"] == metadata.customMetadata!["ちかてつ"])
            #expect(meta.customMetadata!["shinkansen"] == metadata.customMetadata!["shinkansen"])
        }

        @Test func testDelete() async throws {
            let ref = storage.reference(withPath: "ios/public/fileToDelete")
            _ = try await ref.putDataAsync(helloData)
            try await ref.delete()
            // The next delete fails, which shows the first one worked.
            var caughtError = false
            do {
                try await ref.delete()
            } catch {
                caughtError = true
                #expect(error is StorageError)  // test: the async API throws StorageError, as FirebaseStorage 10+
                let nsError = error as NSError
                #expect(nsError.code == StorageErrorCode.objectNotFound.rawValue)
                #expect(nsError.userInfo["ResponseErrorCode"] as? Int == 404)
                let underlyingError = try #require(nsError.userInfo[NSUnderlyingErrorKey] as? NSError)
                #expect(underlyingError.code == 404)
                #expect(underlyingError.domain == "com.google.HTTPStatus")
            }
            #expect(caughtError)
        }

        @Test func testDeleteAfterPut() async throws {
            let ref = storage.reference(withPath: "ios/public/fileToDelete")
            _ = try await ref.putDataAsync(helloData)
            let result2: Void = try await ref.delete()
            _ = result2
        }

        @Test func testSimplePutData() async throws {
            let ref = storage.reference(withPath: "ios/public/testBytesUpload")
            let result = try await ref.putDataAsync(helloData)
            #expect(result.size == 17)
        }

        @Test func testSimplePutSpecialCharacter() async throws {
            let ref = storage.reference(withPath: "ios/public/-._~!$'()*,=:@&+;")
            let data = Data("Hello Swift World-._~!$'()*,=:@&+;".utf8)
            let result = try await ref.putDataAsync(data)
            #expect(result.size == Int64(data.count))
        }

        @Test func testSimplePutDataInBackgroundQueue() async throws {
            actor Background {
                func uploadData(_ ref: StorageReference) async throws -> StorageMetadata {
                    #expect(!Thread.isMainThread)
                    return try await ref.putDataAsync(helloData)
                }
            }
            let ref = storage.reference(withPath: "ios/public/testBytesUpload")
            let result = try await Background().uploadData(ref)
            #expect(result.size == 17)
        }

        @Test func testSimplePutEmptyData() async throws {
            let ref = storage.reference(withPath: "ios/public/testSimplePutEmptyData")
            let result = try await ref.putDataAsync(Data())
            #expect(result.size == 0)
        }

        @Test func testSimplePutDataUnauthorized() async throws {
            let objectLocation = "ios/private/secretfile.txt"
            let ref = storage.reference(withPath: objectLocation)
            do {
                _ = try await ref.putDataAsync(helloData)
                Issue.record("Unexpected success from unauthorized putData")
            } catch StorageError.unauthorized(let bucket, let object, _) {
                #expect(bucket == FirebaseIntegrationTests.bucket)
                #expect(object == objectLocation)
            } catch {
                Issue.record("error failed to convert to StorageError.unauthorized \(error)")
            }
        }

        @Test func testSimplePutDataUnauthorizedWithNSError() async throws {
            let ref = storage.reference(withPath: "ios/private/secretfile.txt")
            do {
                _ = try await ref.putDataAsync(helloData)
                Issue.record("Unexpected success from unauthorized putData")
            } catch {
                let e = error as NSError
                #expect(e.domain == StorageErrorDomain)
                #expect(e.code == StorageErrorCode.unauthorized.rawValue)
                #expect(
                    e.localizedDescription
                        == "User does not have permission to access"
                        + " gs://ios-opensource-samples.appspot.com/ios/private/secretfile.txt.")
                #expect(e.userInfo["ResponseErrorCode"] as? Int == 403)
            }
        }

        @Test func testAttemptToUploadDirectoryShouldFail() async throws {
            let fileURL = try scratchDirectory().appendingPathComponent("HomeImprovement.numbers")
            try FileManager.default.createDirectory(at: fileURL, withIntermediateDirectories: true)
            try Data("About".utf8).write(to: fileURL.appendingPathComponent("About.txt"))
            let ref = storage.reference(withPath: "ios/public/HomeImprovement.numbers")
            do {
                _ = try await ref.putFileAsync(from: fileURL)
                Issue.record("Unexpected success from putFile of a directory")
            } catch StorageError.unknown(let reason, _) {
                #expect(reason.starts(with: "File at URL:"))
                #expect(
                    reason.hasSuffix(
                        "is not reachable. Ensure file URL is not a directory, symbolic link, or invalid url."))
            } catch {
                Issue.record("error failed to convert to StorageError.unknown \(error)")
            }
        }

        @Test func testPutFileWithSpecialCharacters() async throws {
            let fileName = "hello&+@_ .txt"
            let ref = storage.reference(withPath: "ios/public/" + fileName)
            let fileURL = try scratchDirectory().appendingPathComponent(#function + "hello.txt")
            try helloData.write(to: fileURL, options: .atomic)
            let metadata = try await ref.putFileAsync(from: fileURL)
            #expect(fileName == metadata.name)
            _ = try await ref.getMetadata()
        }

        @Test func testSimplePutDataNoMetadata() async throws {
            let ref = storage.reference(withPath: "ios/public/testSimplePutDataNoMetadata")
            _ = try await ref.putDataAsync(helloData)
        }

        @Test func testSimplePutFileNoMetadata() async throws {
            let ref = storage.reference(withPath: "ios/public/hello&+@_ .txt")
            let fileURL = try scratchDirectory().appendingPathComponent("hello.txt")
            try helloData.write(to: fileURL, options: .atomic)
            _ = try await ref.putFileAsync(from: fileURL)
        }

        @Test func testSimplePutFileWithAsyncProgress() async throws {
            let ref = storage.reference(withPath: "ios/public/testSimplePutFile")
            let fileURL = try scratchDirectory().appendingPathComponent(#function + "hello.txt")
            try helloData.write(to: fileURL, options: .atomic)
            let seen = Recorder<Int64>()
            let successMetadata = try await ref.putFileAsync(from: fileURL) { progress in
                if let completed = progress?.completedUnitCount { seen.add(completed) }
            }
            #expect(successMetadata.size == 17)
            #expect(await eventually { !seen.all.isEmpty })  // checkedProgress
            #expect(seen.all == seen.all.sorted())  // never goes down
        }

        @Test func testSimpleGetData() async throws {
            let ref = storage.reference(withPath: "ios/public/1mb2")
            let result = try await ref.data(maxSize: 1024 * 1024)
            #expect(same(result, FirebaseProject.oneMiB))
        }

        @Test func testSimpleGetDataWithTask() async throws {
            let ref = storage.reference(withPath: "ios/public/1mb2")
            let result = try await Task { try await ref.data(maxSize: 1024 * 1024) }.value  // test: in a Task, as named
            #expect(result.count == 1 << 20)
        }

        @Test func testSimpleGetDataInBackgroundQueue() async throws {
            actor Background {
                func data(from ref: StorageReference) async throws -> Data {
                    #expect(!Thread.isMainThread)
                    return try await ref.data(maxSize: 1024 * 1024)
                }
            }
            let ref = storage.reference(withPath: "ios/public/1mb2")
            let result = try await Background().data(from: ref)
            #expect(result.count == 1 << 20)
        }

        @Test func testSimpleGetDataTooSmall() async throws {
            let ref = storage.reference(withPath: "ios/public/1mb2")
            let max: Int64 = 1024
            do {
                _ = try await ref.data(maxSize: max)
                Issue.record("Unexpected success from getData too small")
            } catch StorageError.downloadSizeExceeded(let total, let maxSize) {
                #expect(total == 1_048_576)
                #expect(maxSize == max)
            } catch {
                Issue.record("error failed to convert to StorageError.downloadSizeExceeded")
            }
        }

        @Test func testSimpleGetDownloadURL() async throws {
            let ref = storage.reference(withPath: "ios/public/1mb2")
            // Firebase's pattern with the emulator host this instance points at instead of production's.
            let downloadURLPattern =
                "^http:\\/\\/127.0.0.1:\(project.port)\\/v0\\/b\\/[^\\/]*\\/o\\/"
                + "ios%2Fpublic%2F1mb2\\?alt=media&token=[a-z0-9-]*$"
            let downloadURL = try await ref.downloadURL()
            let testRegex = try NSRegularExpression(pattern: downloadURLPattern)
            let urlString = downloadURL.absoluteString
            let range = NSRange(location: 0, length: urlString.utf16.count)
            #expect(testRegex.firstMatch(in: urlString, options: [], range: range) != nil, "\(urlString)")
        }

        @Test func testAsyncWrite() async throws {
            let ref = storage.reference(withPath: "ios/public/helloworld" + #function)
            let fileURL = try scratchDirectory().appendingPathComponent(#function + "hello.txt")
            _ = try await ref.putDataAsync(helloData)
            let url = try await ref.writeAsync(toFile: fileURL)
            #expect(url.lastPathComponent == #function + "hello.txt")
        }

        @Test func testSimpleGetFile() async throws {
            let ref = storage.reference(withPath: "ios/public/helloworld" + #function)
            let fileURL = try scratchDirectory().appendingPathComponent(#function + "hello.txt")
            let errors = Recorder<String>()
            let task = try await Task {
                _ = try await ref.putDataAsync(helloData)
                let task = ref.write(toFile: fileURL)
                task.observe(.progress) { snapshot in
                    if snapshot.error != nil { errors.add("progress error") }
                    if snapshot.progress == nil { errors.add("missing progress") }
                }
                task.observe(.failure) { snapshot in errors.add("failure \(String(describing: snapshot.error))") }
                return task
            }.value
            let success = await successSnapshot(task)
            #expect(try String(contentsOf: fileURL, encoding: .utf8) == "Hello Swift World")
            #expect(success.description == "<State: Success>")
            #expect(errors.all.isEmpty)
        }

        @Test func testSimpleGetFileWithAsyncProgressCallbackAPI() async throws {
            let ref = storage.reference().child("ios/public/1mb")
            let url = try scratchDirectory().appendingPathComponent("hello.txt")
            let fileURL = url
            let seen = Recorder<Int64>()
            let successURL = try await ref.writeAsync(toFile: fileURL) { progress in
                if let completed = progress?.completedUnitCount { seen.add(completed) }
            }
            #expect(await eventually { seen.all.contains { $0 > 256 * 1024 } })  // checkedProgress, resumeAtBytes
            #expect(seen.all == seen.all.sorted())
            #expect(successURL == url)
        }

        @Test func testUpdateMetadata2() async throws {
            let ref = storage.reference(withPath: "ios/public/1mb2")
            let metadata = StorageMetadata()
            metadata.cacheControl = "cache-control"
            metadata.contentDisposition = "content-disposition"
            metadata.contentEncoding = "gzip"
            metadata.contentLanguage = "de"
            metadata.contentType = "content-type-a"
            metadata.customMetadata = ["a": "b"]

            let updatedMetadata = try await ref.updateMetadata(metadata)
            expectMetadata(updatedMetadata, contentType: "content-type-a", customMetadata: ["a": "b"])

            let metadata2 = updatedMetadata
            metadata2.contentType = "content-type-b"
            metadata2.customMetadata = ["a": "b", "c": "d"]
            let metadata3 = try await ref.updateMetadata(metadata2)
            expectMetadata(metadata3, contentType: "content-type-b", customMetadata: ["a": "b", "c": "d"])

            // As Firebase's test does: clear the fields on the first (fresh) object and send it again.
            metadata.cacheControl = nil
            metadata.contentDisposition = nil
            metadata.contentEncoding = nil
            metadata.contentLanguage = nil
            metadata.contentType = nil
            metadata.customMetadata = nil
            let metadata4 = try await ref.updateMetadata(metadata)
            expectMetadataCleared(metadata4)  // test: SiloStorage sends the nils of a fresh object as deletions
        }

        @Test func testPagedListFiles() async throws {
            let ref = storage.reference(withPath: "ios/public/list")
            let listResult = try await ref.list(maxResults: 2)
            #expect(listResult.items == [ref.child("a"), ref.child("b")])
            #expect(listResult.prefixes == [])
            let pageToken = try #require(listResult.pageToken)
            let listResult2 = try await ref.list(maxResults: 2, pageToken: pageToken)
            #expect(listResult2.items == [])
            #expect(listResult2.prefixes == [ref.child("prefix")])
            #expect(listResult2.pageToken == nil, "pageToken should be nil")
        }

        @Test func testPagedListFilesError() async throws {
            let ref = storage.reference(withPath: "ios/public/list")
            do {
                let _: StorageListResult = try await ref.list(maxResults: 22222)
                Issue.record("Unexpected success from ref.list")
            } catch StorageError.invalidArgument(let message) {
                #expect(message == "Argument 'maxResults' must be between 1 and 1000 inclusive.")
            } catch {
                Issue.record("Unexpected error")
            }
        }

        @Test func testListAllFiles() async throws {
            let ref = storage.reference(withPath: "ios/public/list")
            let listResult = try await ref.listAll()
            #expect(listResult.items == [ref.child("a"), ref.child("b")])
            #expect(listResult.prefixes == [ref.child("prefix")])
            #expect(listResult.pageToken == nil, "pageToken should be nil")
        }
    }

    /// Firebase's `StoragePOSIXErrorTest`: a small file's putFileAsync succeeds and reports its size (added with the
    /// fix for putFile failing with POSIX errno 40 on simulators, firebase-ios-sdk#16386).
    @Suite struct StoragePOSIXErrorTest {
        @Test func testPutFileWithPOSIXError40() async throws {
            let storage = try await FirebaseProject.get().makeStorage()
            let ref = storage.reference(withPath: "ios/public/testPOSIX40")
            let data = Data("Hello".utf8)
            let fileURL = try scratchDirectory().appendingPathComponent("testPutFileWithPOSIXError40-\(UUID()).txt")
            try data.write(to: fileURL)
            defer { try? FileManager.default.removeItem(at: fileURL) }
            let metadata = try await ref.putFileAsync(from: fileURL)
            #expect(metadata.size == Int64(data.count))
        }
    }
}
