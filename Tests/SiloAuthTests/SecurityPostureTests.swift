import SiloAuth
import Testing

@Suite struct SecurityPostureTests {
    static func options(
        _ address: String, rules: Bool = false, emulator: Bool = false, insecure: Bool = false,
        credentials: Bool = false
    ) -> SecurityPosture.Options {
        var options = SecurityPosture.Options()
        options.bindAddress = address
        options.hasRules = rules
        options.emulator = emulator
        options.insecureAllowAll = insecure
        options.hasVerifiableCredentials = credentials
        return options
    }

    @Test func loopbackWithoutRulesRunsAsTheFirebaseEmulator() throws {
        let posture = try SecurityPosture.decide(Self.options("127.0.0.1"))
        #expect(posture.allowAll)
        #expect(posture.emulatorTokens)
        #expect(posture.notices.contains { $0.contains("every request is allowed") })
        #expect(posture.notices.contains { $0.contains("'owner' is the admin") })
    }

    @Test func rulesWithoutEmulatorRefuseUnsignedTokens() throws {
        let posture = try SecurityPosture.decide(Self.options("127.0.0.1", rules: true, credentials: true))
        #expect(!posture.allowAll)
        #expect(!posture.emulatorTokens)
        #expect(posture.notices.isEmpty)
    }

    @Test func emulatorFlagSelectsEmulatorTokensWithRules() throws {
        let posture = try SecurityPosture.decide(Self.options("::1", rules: true, emulator: true))
        #expect(!posture.allowAll)
        #expect(posture.emulatorTokens)
    }

    @Test(arguments: ["0.0.0.0", "::", "192.168.1.10", "silo.example.com", "[::]"])
    func exposedAddressesNeedRulesOrAnExplicitOptOut(address: String) throws {
        #expect(throws: AuthError.self) { try SecurityPosture.decide(Self.options(address)) }
        #expect(throws: AuthError.self) { try SecurityPosture.decide(Self.options(address, emulator: true)) }
        let ruled = try SecurityPosture.decide(Self.options(address, rules: true))
        #expect(!ruled.allowAll && !ruled.emulatorTokens)
        let open = try SecurityPosture.decide(Self.options(address, insecure: true))
        #expect(open.allowAll && !open.emulatorTokens)
        #expect(open.notices.contains { $0.contains("--insecure-allow-all") })
    }

    @Test func emulatorTokensOnAnExposedAddressCarryAWarning() throws {
        let posture = try SecurityPosture.decide(Self.options("0.0.0.0", rules: true, emulator: true))
        #expect(posture.emulatorTokens)
        #expect(posture.notices.contains { $0.hasPrefix("warning:") })
    }

    @Test func contradictoryFlagsAreRefused() {
        #expect(throws: AuthError.self) {
            try SecurityPosture.decide(Self.options("127.0.0.1", rules: true, insecure: true))
        }
    }

    @Test func noVerifiableCredentialsIsAnnounced() throws {
        let posture = try SecurityPosture.decide(Self.options("127.0.0.1", rules: true))
        #expect(posture.notices.contains { $0.contains("every token is refused") })
    }

    @Test(arguments: [
        ("127.0.0.1", true), ("127.1.2.3", true), ("localhost", true), ("LOCALHOST", true), ("::1", true),
        ("[::1]", true), ("::ffff:127.0.0.1", true), ("0.0.0.0", false), ("::", false), ("127.0.0.256", false),
        ("127.0.0", false), ("128.0.0.1", false), ("localhost.example.com", false), ("", false),
        ("127.0.0.1.nip.io", false),
    ])
    func loopbackDetection(address: String, expected: Bool) {
        #expect(SecurityPosture.isLoopback(address) == expected)
    }
}
