/// The stored form of a principal (who started an upload session, ``UploadSession/starter``): who the caller is and
/// what was verified about it when the session started — its uid, claims, admin and verified flags, service account
/// and scopes — and never the credential itself, which decodes as empty. A session's commit is decided for this
/// principal without the credential being kept anywhere.
extension Principal: Codable {
    private enum CodingKeys: String, CodingKey {
        case scheme, uid, claims, admin, verified, serviceAccount
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            scheme: try c.decode(String.self, forKey: .scheme), credential: "",
            uid: try c.decodeIfPresent(String.self, forKey: .uid),
            claimsJSON: try c.decodeIfPresent(String.self, forKey: .claims) ?? "{}",
            isAdmin: try c.decode(Bool.self, forKey: .admin), verified: try c.decode(Bool.self, forKey: .verified),
            serviceAccount: try c.decodeIfPresent(ServiceAccountCaller.self, forKey: .serviceAccount))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(scheme, forKey: .scheme)
        try c.encodeIfPresent(uid, forKey: .uid)
        if claimsJSON != "{}" { try c.encode(claimsJSON, forKey: .claims) }
        try c.encode(isAdmin, forKey: .admin)
        try c.encode(verified, forKey: .verified)
        try c.encodeIfPresent(serviceAccount, forKey: .serviceAccount)
    }
}

extension ServiceAccountCaller: Codable {
    private enum CodingKeys: String, CodingKey { case email, scopes, credential }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            email: try c.decode(String.self, forKey: .email),
            scopes: try c.decodeIfPresent([String].self, forKey: .scopes) ?? [],
            credential: try c.decode(Credential.self, forKey: .credential))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(email, forKey: .email)
        if !scopes.isEmpty { try c.encode(scopes, forKey: .scopes) }
        try c.encode(credential, forKey: .credential)
    }
}
