@_spi(Testing) import SiloHashing
import Testing

@Suite struct CryptoTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func sha256Vectors(input: String, expected: String) {
        // FIPS 180-4 / NIST example values.
        #expect(SHA256.digest(Array(input.utf8)) == hex(expected))
    }

    @Test func sha256OfAMillionAs() {
        #expect(
            SHA256.digest([UInt8](repeating: 0x61, count: 1_000_000))
                == hex("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"))
    }

    @Test(
        arguments: [
            // RFC 4231 test cases 1, 2, 3, 4 and 6.
            (
                [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
            ),
            (
                Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
            ),
            (
                [UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
            ),
            (
                Array(1...25), [UInt8](repeating: 0xcd, count: 50),
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
            ),
            (
                [UInt8](repeating: 0xaa, count: 131),
                Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
        ] as [([UInt8], [UInt8], String)])
    func hmacSHA256RFC4231(key: [UInt8], message: [UInt8], expected: String) {
        #expect(HMACSHA256.authenticationCode(key: key, message: message) == hex(expected))
        #expect(HMACSHA256.isValid(hex(expected), key: key, message: message))
    }

    @Test func hmacRejectsAlteredCodeAndEmptyKeyWorks() {
        var code = HMACSHA256.authenticationCode(key: Array("k".utf8), message: Array("m".utf8))
        code[31] ^= 1
        #expect(!HMACSHA256.isValid(code, key: Array("k".utf8), message: Array("m".utf8)))
        #expect(!HMACSHA256.isValid(code.dropLast(), key: Array("k".utf8), message: Array("m".utf8)))
        // RFC 2104 allows an empty key; it must not be confused with "reuse the previous key".
        #expect(HMACSHA256.authenticationCode(key: [], message: []).count == 32)
        #expect(
            HMACSHA256.authenticationCode(key: [], message: [])
                == hex("b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"))
    }

    @Test func constantTimeEquality() {
        #expect(ConstantTime.equals([], []))
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
    }

    @Test func rs256RoundTripThroughEveryKeyForm() throws {
        let key = try RSAPrivateKey(bits: 2048)
        let message = Array("header.payload".utf8)
        let signature = try key.signRS256(message)
        #expect(signature.count == 256)
        let (n, e) = try key.publicComponents()
        #expect(e == [0x01, 0x00, 0x01])
        let forms = [
            try RSAPublicKey(modulus: n, exponent: e),
            try RSAPublicKey(pem: try key.publicKeyPEM()),
            try RSAPublicKey(pem: try key.selfSignedCertificatePEM()),
        ]
        for publicKey in forms {
            #expect(publicKey.bits == 2048)
            #expect(publicKey.verifyRS256(signature: signature, message: message))
            var tampered = signature
            tampered[10] ^= 0x40
            #expect(!publicKey.verifyRS256(signature: tampered, message: message))
            #expect(!publicKey.verifyRS256(signature: signature, message: message + [0]))
            #expect(!publicKey.verifyRS256(signature: Array(signature.dropLast()), message: message))
            #expect(!publicKey.verifyRS256(signature: [], message: message))
        }
    }

    @Test func anotherKeysSignatureDoesNotVerify() throws {
        let a = try RSAPrivateKey()
        let b = try RSAPrivateKey()
        let message = Array("m".utf8)
        let (n, e) = try b.publicComponents()
        #expect(
            !(try RSAPublicKey(modulus: n, exponent: e)).verifyRS256(
                signature: try a.signRS256(message), message: message))
    }

    @Test func smallAndMalformedKeysAreRefused() throws {
        let small = try RSAPrivateKey(bits: 1024)
        #expect(throws: CryptoError.self) { try RSAPublicKey(pem: try small.publicKeyPEM()) }
        let (n, e) = try small.publicComponents()
        #expect(throws: CryptoError.self) { try RSAPublicKey(modulus: n, exponent: e) }
        #expect(throws: CryptoError.self) { try RSAPublicKey(modulus: [], exponent: [1, 0, 1]) }
        #expect(throws: CryptoError.self) {
            try RSAPublicKey(pem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
        }
        #expect(throws: CryptoError.self) { try RSAPublicKey(pem: "not pem at all") }
    }
}
