import SiloWire
import Testing

/// `XMLText.elementsWithAttributes`, which reads the attributes of GCS's ACL documents (`<Scope type="…">`).
@Suite struct XMLTextTests {
    @Test func attributesSelfClosingAndContent() {
        let xml = """
            <Entries><Entry><Scope type="AllUsers"/></Entry><Entry><Scope  type = 'UserByEmail' >\
            <EmailAddress>a&amp;b@x</EmailAddress></Scope></Entry><Entry><Scope type="AllAuthenticatedUsers" />\
            </Entry><Entry><Scope type="Group&quot;s"></Scope></Entry></Entries>
            """
        let scopes = XMLText.elementsWithAttributes("Scope", in: xml[...])
        #expect(
            scopes.map { $0.attributes["type"] } == ["AllUsers", "UserByEmail", "AllAuthenticatedUsers", "Group\"s"])
        #expect(scopes.map(\.content.isEmpty) == [true, false, true, true])
        #expect(XMLText.value("EmailAddress", in: scopes[1].content) == "a&b@x")
    }

    @Test func otherNamesAndMalformedTags() {
        // `<ScopeType>` is another element; a tag whose attribute is not name="value" ends the search.
        #expect(XMLText.elementsWithAttributes("Scope", in: "<ScopeType>x</ScopeType>"[...]).isEmpty)
        #expect(XMLText.elementsWithAttributes("Scope", in: "<Scope type=AllUsers/>"[...]).isEmpty)
        #expect(XMLText.elementsWithAttributes("Scope", in: "<Scope type=\"unterminated/>"[...]).isEmpty)
        #expect(XMLText.elementsWithAttributes("Scope", in: "<Scope type=\"x\">no end"[...]).isEmpty)
        let plain = XMLText.elementsWithAttributes("Scope", in: "<Scope>inner</Scope><Scope/>"[...])
        #expect(plain.map { String($0.content) } == ["inner", ""] && plain.allSatisfy(\.attributes.isEmpty))
    }
}
