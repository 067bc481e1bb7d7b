import SiloAuth
import SiloCore
import Testing

@Suite struct AdminKeyTests {
    @Test(arguments: ["Bearer", "Firebase", "bearer"])
    func anAdminKeyIsTheAdmin(scheme: String) throws {
        let principal = try #require(
            try Fixtures.fullVerifier().principal(authorizationHeader: "\(scheme) \(Fixtures.adminKey)"))
        #expect(principal.isAdmin)
        #expect(principal.verified)
        #expect(principal.uid == nil)
        #expect(principal.claimsJSON == "{}")
    }

    @Test func everyKeyInTheFileWorksAndOthersDoNot() throws {
        let directory = TemporaryDirectory()
        let path = directory.write(
            "admin-keys", "# rotated 2025-06\n\n  first-admin-key-0123456789  \r\nsecond-admin-key-abcdefghij\n")
        let keys = try AdminKeys(contentsOfFile: path)
        #expect(keys.count == 2)
        #expect(keys.matches("first-admin-key-0123456789"))
        #expect(keys.matches("second-admin-key-abcdefghij"))
        #expect(!keys.matches("second-admin-key-abcdefghi"))
        #expect(!keys.matches("# rotated 2025-06"))
        #expect(!keys.matches(""))
    }

    @Test func weakOrEmptyKeyFilesAreRefusedWithoutQuotingTheKey() {
        let directory = TemporaryDirectory()
        for (name, text) in [
            ("short", "tooshort\n"), ("empty", "# nothing\n\n"), ("spaces", "a key with spaces inside\n"),
        ] {
            let path = directory.write(name, text)
            #expect {
                try AdminKeys(contentsOfFile: path)
            } throws: { error in
                let error = error as! AuthError
                return error.code == .invalidConfiguration && error.httpStatus == 500
                    && !error.detailedDescription().contains("tooshort")
                    && !error.detailedDescription().contains("with spaces")
            }
        }
    }
}
