import SiloCore
import SiloServer
import Testing

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit
@testable import SiloTestFaults

/// storage-testbench's instruction names, parsed once when a retry test is created (docs/test-faults.md).
@Suite struct FaultInstructionTests {
    @Test(arguments: [
        ("return-503", FaultInstruction.Action.returnStatus(503)),
        ("return-400", .returnStatus(400)),
        ("return-599", .returnStatus(599)),
        ("return-reset-connection", .resetConnection),
        ("return-broken-stream", .breakBody(afterBytes: 4)),
        ("return-broken-stream-after-256K", .breakBody(afterBytes: 262_144)),
        ("return-broken-stream-final-chunk-after-10B", .breakFinalChunk(afterBytes: 10)),
        ("return-503-after-256K", .returnStatusAfter(status: 503, bytes: 262_144)),
        ("return-408-after-8192K", .returnStatusAfter(status: 408, bytes: 8_388_608)),
        ("stall-for-10s-after-12K", .stall(seconds: 10, afterBytes: 12_288)),
        ("stall-for-0s-after-0K", .stall(seconds: 0, afterBytes: 0)),
    ])
    func parses(_ text: String, _ action: FaultInstruction.Action) throws {
        let instruction = try FaultInstruction(text)
        #expect(instruction.action == action)
        #expect(instruction.text == text)
    }

    @Test(arguments: [
        "", "return-", "return-503K", "return-99", "return-600", "return--1", "return-+503", "return-503 ",
        "return-reset", "return-broken-stream-after-K", "return-broken-stream-after-1M",
        "return-broken-stream-final-chunk-after-B", "return-503-after-", "return-503-after-1KK", "stall-for-s-after-1K",
        "stall-for-10s-after-K", "stall-for-601s-after-1K", "stall-for-10-after-1K", "stall-for-10s",
        "return-503-after-99999999999K", "redirect-send-token-abc", "return-503-if-dp-enforced",
        String(repeating: "return-503", count: 20),
    ])
    func refuses(_ text: String) {
        #expect(throws: StorageError.self) { try FaultInstruction(text) }
    }

    @Test func uploadFaultsApplyToUploadsOnly() throws {
        for text in ["return-503-after-1K", "return-broken-stream-final-chunk-after-1B"] {
            let instruction = try FaultInstruction(text)
            #expect(instruction.applies(to: "storage.objects.insert"))
            #expect(!instruction.applies(to: "storage.objects.get"))
        }
        #expect(try FaultInstruction("stall-for-1s-after-1K").applies(to: "storage.objects.get"))
    }
}
