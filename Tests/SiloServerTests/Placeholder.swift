import Testing
@Test func placeholderSiloServerTests() {}
