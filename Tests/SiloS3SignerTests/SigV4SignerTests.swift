import SiloHashing
import SiloS3Signer
import Testing

// Expected values: the worked examples of the S3 SigV4 documentation (same example keys, bucket and instant), each
// recomputed step by step from the documented algorithm with an independent script (Python's hashlib/hmac, one
// line per step) before being written here; the path-style vector with a session token is our own, computed the
// same way.

private let hashing = SigV4Hashing(
    sha256: { SHA256.digest($0) }, hmacSHA256: { HMACSHA256.authenticationCode(key: $0, message: $1) })
private let exampleCredentials = SigV4Credentials(
    accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
private let exampleSigner = SigV4Signer(credentials: exampleCredentials, region: "us-east-1", hashing: hashing)
/// 2013-05-24T00:00:00Z.
private let exampleTime = SigV4Timestamp(secondsSince1970: 1_369_353_600)
private let exampleHost = "examplebucket.s3.amazonaws.com"
private let emptyHash = SigV4Payload.emptySHA256

private func authorization(_ headers: [SigV4Header]) -> String? {
    headers.first { $0.name == "Authorization" }?.value
}

@Suite struct SigV4SignerTests {
    @Test func timestampFormatting() {
        #expect(exampleTime.dateTime == "20130524T000000Z")
        #expect(exampleTime.date == "20130524")
        #expect(SigV4Timestamp(secondsSince1970: 0).dateTime == "19700101T000000Z")
        #expect(SigV4Timestamp(secondsSince1970: 951_782_400 + 86_399).dateTime == "20000229T235959Z")
        #expect(SigV4Timestamp(secondsSince1970: 1_798_761_599).dateTime == "20261231T235959Z")
    }

    @Test func signingKeyDerivation() {
        #expect(
            SigV4Encoding.hex(exampleSigner.signingKey(date: "20130524"))
                == "dbb893acc010964918f1fd433add87c70e8b0db6be30c1fbeafefa5ec6ba8378")
        // The general-reference example: IAM, 2012-02-15, a secret with '+'.
        let iam = SigV4Signer(
            credentials: SigV4Credentials(
                accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1", service: "iam", hashing: hashing)
        #expect(
            SigV4Encoding.hex(iam.signingKey(date: "20120215"))
                == "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d")
    }

    @Test func getObjectWithRange() {
        let request = SigV4Request(
            method: "GET", host: exampleHost, path: "/test.txt", headers: [SigV4Header("Range", "bytes=0-9")])
        var withAmz = request
        withAmz.headers += [
            SigV4Header("x-amz-content-sha256", emptyHash), SigV4Header("x-amz-date", "20130524T000000Z"),
        ]
        let canonical = exampleSigner.canonicalRequest(withAmz, payload: emptyHash)
        #expect(
            canonical == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        #expect(
            exampleSigner.stringToSign(canonicalRequest: canonical, at: exampleTime) == """
                AWS4-HMAC-SHA256
                20130524T000000Z
                20130524/us-east-1/s3/aws4_request
                7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
                """)
        let headers = exampleSigner.sign(request, payload: .sha256(hex: emptyHash), at: exampleTime)
        #expect(
            authorization(headers)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(headers.contains(SigV4Header("x-amz-date", "20130524T000000Z")))
        #expect(headers.contains(SigV4Header("x-amz-content-sha256", emptyHash)))
    }

    @Test func putObjectWithPayloadHashAndEncodedKey() {
        let body = Array("Welcome to Amazon S3.".utf8)
        let payloadHash = SigV4Encoding.hex(SHA256.digest(body))
        #expect(payloadHash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let request = SigV4Request(
            method: "PUT", host: exampleHost, path: "/test$file.text",
            headers: [
                SigV4Header("Date", "Fri, 24 May 2013 00:00:00 GMT"),
                SigV4Header("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ])
        #expect(request.encodedPathAndQuery == "/test%24file.text")
        let headers = exampleSigner.sign(request, payload: .sha256(hex: payloadHash), at: exampleTime)
        #expect(
            authorization(headers)?.hasSuffix(
                "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
                    + "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd") == true)
    }

    @Test func subresourceWithoutValueAndSortedQuery() {
        let lifecycle = SigV4Request(method: "GET", host: exampleHost, path: "/", query: [SigV4QueryItem("lifecycle")])
        #expect(lifecycle.encodedPathAndQuery == "/?lifecycle=")
        #expect(
            authorization(exampleSigner.sign(lifecycle, payload: .sha256(hex: emptyHash), at: exampleTime))?
                .hasSuffix("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") == true)

        // Given out of order: the canonical query sorts them.
        let list = SigV4Request(
            method: "GET", host: exampleHost, path: "/",
            query: [SigV4QueryItem("prefix", "J"), SigV4QueryItem("max-keys", "2")])
        #expect(list.encodedPathAndQuery == "/?max-keys=2&prefix=J")
        #expect(
            authorization(exampleSigner.sign(list, payload: .sha256(hex: emptyHash), at: exampleTime))?
                .hasSuffix("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)
    }

    @Test func presignedGet() {
        let request = SigV4Request(method: "GET", host: exampleHost, path: "/test.txt")
        let target = exampleSigner.presign(request, expiresInSeconds: 86_400, at: exampleTime)
        #expect(
            target == "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
                + "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"
                + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
                + "&X-Amz-SignedHeaders=host")
    }

    @Test func pathStyleUnsignedPayloadWithSessionToken() {
        var credentials = exampleCredentials
        credentials.sessionToken = "FQoGZXIvYXdzEXAMPLE"
        let signer = SigV4Signer(credentials: credentials, region: "us-east-1", hashing: hashing)
        let request = SigV4Request(
            method: "PUT", host: "127.0.0.1:18333",
            path: "/silo-test/blobs/0123456789abcdef0123456789abcdef/seg-00000000000000000000",
            query: [SigV4QueryItem("uploadId", "a/b+c="), SigV4QueryItem("partNumber", "3")])
        #expect(
            request.encodedPathAndQuery
                == "/silo-test/blobs/0123456789abcdef0123456789abcdef/seg-00000000000000000000"
                + "?partNumber=3&uploadId=a%2Fb%2Bc%3D")
        let headers = signer.sign(request, payload: .unsigned, at: exampleTime)
        #expect(headers.contains(SigV4Header("x-amz-security-token", "FQoGZXIvYXdzEXAMPLE")))
        #expect(headers.contains(SigV4Header("x-amz-content-sha256", "UNSIGNED-PAYLOAD")))
        #expect(
            authorization(headers)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, "
                + "Signature=59455fb6c01769a0c20c95763abd3bc4d6f0eb0e8cf3e83ee467e230a37cf1d2")
    }

    @Test func encodingRules() {
        #expect(SigV4Encoding.uriEncode("a b/c~d_e.f-g*h") == "a%20b%2Fc~d_e.f-g%2Ah")
        #expect(SigV4Encoding.path("/bucket/a b/ü") == "/bucket/a%20b/%C3%BC")
        #expect(SigV4Encoding.path("") == "/")
        #expect(
            SigV4Encoding.canonicalQuery([SigV4QueryItem("b", "2"), SigV4QueryItem("a", "z"), SigV4QueryItem("a", "y")])
                == "a=y&a=z&b=2")
        #expect(!String(describing: exampleCredentials).contains("EXAMPLEKEY"))
    }
}
