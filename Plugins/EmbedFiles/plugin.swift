import Foundation
import PackagePlugin

/// Embeds files the server serves into the module that serves them, at build time (`silo-embed`, Sources/SiloEmbed):
/// docs/openapi.json as `EmbeddedOpenAPI` into SiloServerKit (which serves it and reads it for `fields=`), and the web
/// console's files in console/ (HTML, CSS, JavaScript, SVG) as `EmbeddedConsole` into SiloConsole. The sources stay
/// the only copy: edit them and build.
@main
struct EmbedFiles: BuildToolPlugin {
    static let consoleExtensions: Set<String> = ["html", "css", "js", "svg"]

    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let tool = try context.tool(named: "SiloEmbed").url
        let root = context.package.directoryURL
        guard target.name == "SiloConsole" else {
            return [embed("EmbeddedOpenAPI", [root.appending(path: "docs/openapi.json")], tool: tool, context: context)]
        }
        let console = root.appending(path: "console")
        let consoleFiles = try FileManager.default.contentsOfDirectory(at: console, includingPropertiesForKeys: nil)
            .filter { Self.consoleExtensions.contains($0.pathExtension) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        return [embed("EmbeddedConsole", consoleFiles, tool: tool, context: context)]
    }

    private func embed(_ name: String, _ files: [URL], tool: URL, context: PluginContext) -> Command {
        let output = context.pluginWorkDirectoryURL.appending(path: name + ".swift")
        return .buildCommand(
            displayName: "Embedding \(files.count) file(s) as \(name)", executable: tool,
            arguments: [name, output.path] + files.map(\.path), inputFiles: files, outputFiles: [output])
    }
}
