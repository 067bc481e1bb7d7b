import SiloAuth
import SiloCore
import Testing

/// The server verifies from many threads at once (its workers), against one shared key set, while a reload may swap
/// the keys underneath.
@Suite struct ConcurrencyTests {
    @Test func manyThreadsVerifyWithOneKeySetDuringReloads() async throws {
        let directory = TemporaryDirectory()
        let keys = try KeySet(contentsOfFile: directory.write("keys.json", Fixtures.jwks()))
        var configuration = TokenVerifier.Configuration()
        configuration.firebase = FirebaseIDTokens(projectID: Fixtures.project, keys: keys)
        let verifier = TokenVerifier(configuration)
        let good = Fixtures.signRS256(claims: Fixtures.firebaseClaims())
        let forged = Fixtures.signRS256(claims: Fixtures.firebaseClaims(), key: Fixtures.strangerKey)
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<400 {
                group.addTask {
                    if i.isMultiple(of: 25) { _ = try? keys.reload() }
                    let token = i.isMultiple(of: 2) ? good : forged
                    let accepted = (try? verifier.verify(token: token, at: Fixtures.now)) != nil
                    return accepted == i.isMultiple(of: 2)
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.count == 400)
        #expect(outcomes.allSatisfy { $0 })
        withExtendedLifetime(directory) {}
    }
}
