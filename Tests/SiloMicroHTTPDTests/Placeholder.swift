import Testing
@Test func placeholderSiloMicroHTTPDTests() {}
