import SiloCore
import SiloHTTP
import SiloTesting
import SiloWire
import Testing

/// An object's ACL is changed by the ACL calls and also by a metadata write that names `acl` or `predefinedAcl`;
/// GCS asks for `storage.objects.setIamPolicy` for the latter too ("only required if the request changes the
/// object's ACL"), decided on the version being changed. `roles/storage.objectUser` may update metadata but not
/// ACLs.
@Suite struct ACLChangeAccessTests {
    let s: SecuredServer

    init() throws {
        s = try SecuredServer()
        try s.put("doc.txt", "private")
        try s.bind([("roles/storage.objectUser", ["serviceAccount:\(SecuredServer.writer.email)"])])
    }

    var object: String { "\(s.objects)/doc.txt" }

    @Test("PATCH and PUT with acl, or with predefinedAcl, need storage.objects.setIamPolicy; other fields do not")
    func metadataWritesThatChangeTheACL() throws {
        let user = s.bearer(try s.token(SecuredServer.writer))
        let acl = #"{"acl":[{"entity":"allUsers","role":"READER"}]}"#
        #expect(try s.send("PATCH", object, acl, headers: user).status == 403)
        #expect(try s.send("PUT", object, acl, headers: user).status == 403)
        #expect(try s.send("PATCH", "\(object)?predefinedAcl=publicRead", "{}", headers: user).status == 403)
        #expect(try s.send("GET", "\(object)?alt=media").status == 401, "still private")
        let plain = try s.send("PATCH", object, #"{"metadata":{"k":"v"}}"#, headers: user)
        #expect(plain.status == 200, "\(plain.text)")
        #expect(try s.send("PATCH", object, acl, headers: s.admin).status == 200)
        #expect(try s.send("GET", "\(object)?alt=media").text == "private")
    }
}
