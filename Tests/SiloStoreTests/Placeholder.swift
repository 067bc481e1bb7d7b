import Testing
@Test func placeholderSiloStoreTests() {}
