import Testing

@Test func placeholderSiloWireTests() {}
