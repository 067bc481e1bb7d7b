internal import CMicroHTTPD
import SiloHTTP

/// Builds the transport-independent head from what MHD parsed plus the raw target we captured ourselves.
func makeRequestHead(connection: OpaquePointer, rawTarget: String, method: String, version: String) -> HTTPRequestHead {
    var head = HTTPRequestHead(method: method, target: rawTarget, headers: requestHeaders(connection), version: version)
    var peer = (UInt64(0), UInt64(0))
    withUnsafeMutableBytes(of: &peer) {
        silo_mhd_client_address(connection, $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }
    head.peer = withUnsafeBytes(of: &peer) { PeerAddress(bytes: $0) }
    var local = (UInt64(0), UInt64(0))
    var port: UInt16 = 0
    let named = withUnsafeMutableBytes(of: &local) {
        silo_mhd_local_address(connection, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), &port)
    }
    if named == 0 {
        head.local = LocalEndpoint(address: withUnsafeBytes(of: &local) { PeerAddress(bytes: $0) }, port: Int(port))
    }
    return head
}

/// All request header fields in arrival order (MHD keeps them in a list as received).
private func requestHeaders(_ connection: OpaquePointer) -> HTTPHeaders {
    var headers = HTTPHeaders()
    withUnsafeMutablePointer(to: &headers) { pointer in
        // The iterator runs synchronously inside this call, so the pointer is valid throughout. The closure
        // captures nothing, which makes it a valid C function pointer.
        _ = MHD_get_connection_values(
            connection, .HEADER_KIND,
            { cls, _, key, value in
                guard let cls, let key else { return .YES }
                cls.assumingMemoryBound(to: HTTPHeaders.self).pointee
                    .add(String(cString: key), value.map { String(cString: $0) } ?? "")
                return .YES
            }, pointer)
    }
    return headers
}

extension HTTPRequestHead {
    /// The client declared a body (a non-zero Content-Length, or any Transfer-Encoding).
    var hasBody: Bool {
        if headers.contains("Transfer-Encoding") { return true }
        if let length = headers["Content-Length"] { return length.trimmingSpaces != "0" }
        return false
    }

    /// The Content-Length of the body, when given (MHD rejects requests whose value is malformed).
    var declaredBodyLength: Int64? {
        if headers.contains("Transfer-Encoding") { return nil }
        return headers["Content-Length"].flatMap { Int64($0.trimmingSpaces) }
    }

    /// The client waits for `100 Continue` before sending its body.
    var awaitsContinue: Bool {
        guard version == "HTTP/1.1", let expect = headers["Expect"] else { return false }
        return equalsIgnoringCase(expect.trimmingSpaces, "100-continue")
    }
}

extension String {
    fileprivate var trimmingSpaces: Substring {
        var text = self[...]
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
