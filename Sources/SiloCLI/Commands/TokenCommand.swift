import SiloAuth

/// `silo token`: mint a development ID token signed with the server's HS256 secret.
struct TokenCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "token", abstract: "Mint a development ID token (HS256, self-issued) for --token / SILO_TOKEN.",
            options: [
                .value("uid", valueName: "UID", help: "the user id (request.auth.uid)"),
                .value("claims", valueName: "JSON", help: "custom claims as a JSON object, e.g. '{\"admin\":true}'"),
                .value(
                    "auth-secret", valueName: "FILE", help: "the HS256 secret file the server checks tokens with",
                    environment: "SILO_AUTH_SECRET", configurable: true),
                .value(
                    "project", valueName: "ID", help: "the project id (the token's audience)",
                    environment: "SILO_PROJECT", configurable: true),
                .value("lifetime", valueName: "SECONDS", help: "how long the token is valid", defaultValue: "3600"),
            ])
    }

    var uid: String
    var claims: String
    var secretFile: String
    var project: String
    var lifetime: Int

    init(from values: ParsedValues) throws {
        guard let uid = values.value("uid") else { throw ValidationError("missing --uid") }
        guard let secretFile = values.value("auth-secret") else {
            throw ValidationError("missing --auth-secret FILE (or SILO_AUTH_SECRET)")
        }
        guard let project = values.value("project") else {
            throw ValidationError("missing --project (or SILO_PROJECT)")
        }
        self.uid = uid
        self.claims = values.value("claims") ?? "{}"
        self.secretFile = secretFile
        self.project = project
        self.lifetime = try values.integer("lifetime", in: 1...(366 * 86_400)) ?? 3600
    }

    func run(_ context: CommandContext) async throws {
        do {
            let tokens = try SelfIssuedTokens(secretFile: secretFile, audience: project)
            let token = try tokens.mint(uid: uid, claimsJSON: claims, lifetimeSeconds: Int64(lifetime))
            context.stdout.line(token)
        } catch {
            var message = error.message
            if let cause = error.cause as? AuthError { message += ": " + cause.message }
            throw CommandFailure(message)
        }
    }
}
