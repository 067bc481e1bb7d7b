// libFuzzer harness for SiloHashing's MD5 and CRC-32C (CMD5, Silo's own C). The input is the bytes hashed.
// Properties, at every CMD5 level this CPU has (portable C; CRC-32C by instruction; AVX-512):
// - MD5Hasher's digest is libcrypto's MD5 of the same bytes, fed whole, in pieces cut where the input's own hash
//   says (so every position against the 64-byte block is reached), and one byte at a time for short inputs;
// - ObjectHasher's MD5 is the same digest and its CRC-32C is ISA-L's (CRC32C), fed in the same pieces;
// - under ASan, no read or write outside the bytes given (the C code's partial-block and padding paths).
import CCrypto
import SiloCore

@testable import SiloHashing

private func libcryptoMD5(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 16)
    var length: UInt32 = 0
    let done = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &digest, &length, EVP_md5(), nil) }
    require(done == 1 && length == 16, "EVP_Digest failed")
    return digest
}

@_cdecl("LLVMFuzzerTestOneInput")
public func hashFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var random = InputRandom(input)
    let expected = libcryptoMD5(input)
    let expectedCRC = CRC32C.checksum(input)
    let cuts = random.cuts(in: input.count, limit: 12)
    for level in 0...MD5Hasher.level {
        let whole = MD5Hasher(level: level)
        whole.update(input)
        require(whole.finalize() == expected, "level \(level): MD5 of \(input.count) bytes whole")

        let split = MD5Hasher(level: level)
        let object = ObjectHasher(md5Level: level)
        for piece in pieces(input, at: cuts) {
            piece.withUnsafeBytes {
                split.update($0)
                object.update($0)
            }
        }
        require(split.finalize() == expected, "level \(level): MD5 cut at \(cuts)")
        let summary = object.finalize()
        require(summary.md5 == expected, "level \(level): ObjectHasher MD5 cut at \(cuts)")
        require(summary.crc32c == expectedCRC, "level \(level): ObjectHasher CRC-32C cut at \(cuts)")
        require(summary.size == Int64(input.count), "level \(level): size")

        if input.count <= 300 {
            let bytewise = ObjectHasher(md5Level: level)
            for byte in input { bytewise.update(CollectionOfOne(byte)) }
            let each = bytewise.finalize()
            require(each.md5 == expected && each.crc32c == expectedCRC, "level \(level): one byte at a time")
        }
    }
    return 0
}
