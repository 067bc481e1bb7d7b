import SiloCore
import Testing

/// Documents (what the HMAC keys are kept in): the same behaviour from every store.
extension MetadataStoreConformanceTests {
    @Test(arguments: MetadataBackend.allCases)
    func documentsAreReadModifyWrittenAndSurviveReopening(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        #expect(try fixture.store.document("keys") == nil)
        try fixture.store.updateDocument("keys") { text in
            #expect(text == nil)
            text = #"[{"a":1}]"#
        }
        try fixture.store.updateDocument("other") { $0 = "x" }
        try fixture.store.updateDocument("keys") { text in text = (text ?? "") + " and more" }
        #expect(try fixture.store.document("keys") == #"[{"a":1}] and more"#)

        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try fixture.store.updateDocument("keys") { text in
                text = "half written"
                throw Refused()
            }
        }
        #expect(try fixture.store.document("keys") == #"[{"a":1}] and more"#, "a throwing change writes nothing")

        try fixture.store.reset()
        #expect(try fixture.store.document("keys") != nil, "a reset drops test data, not documents")
        try fixture.reopen()
        #expect(try fixture.store.document("keys") == #"[{"a":1}] and more"#)
        try fixture.store.updateDocument("keys") { $0 = nil }
        #expect(try fixture.store.document("keys") == nil)
        #expect(try fixture.store.document("other") == "x")
    }
}
