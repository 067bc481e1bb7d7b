/// The OpenAPI 3.1 document of this server (docs/openapi.json), served at `GET /openapi.json`: embedded in the binary
/// at build time (Plugins/EmbedFiles), so the served document is always the file's.
package enum OpenAPIDocument {
    /// The document's bytes, converted once.
    package static let bytes = Array(EmbeddedOpenAPI.files["openapi.json", default: ""].utf8)
}
