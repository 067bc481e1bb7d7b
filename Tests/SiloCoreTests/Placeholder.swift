import Testing

@Test func placeholderSiloCoreTests() {}
