internal import CCurl

/// One blocking request/response exchange on the calling thread.
enum CurlTransfer {
    /// Configures a fresh easy handle for `request`, runs it, and returns the final status. Throws what a handler
    /// threw, `CancellationError` if `control` aborted it, or a `CurlError`.
    static func run(
        _ request: CurlRequest, handler: any CurlResponseHandler, control: CurlTransferControl,
        pool: CurlHandlePool? = nil
    ) throws -> Int {
        let easy = try pool?.checkOut() ?? CurlEasy()
        defer { pool?.checkIn(easy) }
        let source = try CurlBodySource(request.body)
        let context = CurlTransferContext(handler: handler, control: control, source: source)
        // Passed unretained: `context` outlives `perform()` (withExtendedLifetime below), the only time libcurl
        // calls back. See CurlCallbacks.swift.
        let userdata = Unmanaged.passUnretained(context).toOpaque()

        try easy.set(CURLOPT_URL, request.url)
        try easy.set(CURLOPT_NOSIGNAL, 1)  // no SIGALRM for timeouts: we run on many threads
        try easy.set(CURLOPT_BUFFERSIZE, request.bufferSize)
        try easy.set(CURLOPT_TCP_NODELAY, 1)
        if let trusted = request.trustedCertificatesFile { try easy.set(CURLOPT_CAINFO, trusted) }
        try configureMethod(easy, request)
        try configureTimeouts(easy, request.timeouts)

        var lines = request.headers.map { "\($0.name): \($0.value)" }
        // libcurl adds `Expect: 100-continue` to larger uploads and waits for the interim response; ask for none.
        if !request.headers.contains(where: { $0.name.lowercased() == "expect" }) { lines.append("Expect:") }
        let headerList = try CurlStringList(lines)
        try easy.set(CURLOPT_HTTPHEADER, list: headerList)

        try easy.set(CURLOPT_WRITEFUNCTION, write: curlWriteBody)
        try easy.set(CURLOPT_WRITEDATA, pointer: userdata)
        try easy.set(CURLOPT_HEADERFUNCTION, write: curlWriteHeader)
        try easy.set(CURLOPT_HEADERDATA, pointer: userdata)
        try easy.setRead(curlReadBody)
        try easy.set(CURLOPT_READDATA, pointer: userdata)
        try easy.setProgress(curlProgress)
        try easy.set(CURLOPT_XFERINFODATA, pointer: userdata)
        try easy.set(CURLOPT_NOPROGRESS, 0)

        let code = withExtendedLifetime((context, headerList)) { easy.perform() }
        if let failure = context.failure { throw failure }
        if control.isAborted { throw CancellationError() }
        guard code == CURLE_OK else {
            throw CurlError(code: Int(code.rawValue), message: easy.message(for: code), kind: kind(of: code))
        }
        let status = easy.responseCode()
        // A response with no header block we could parse (HTTP/0.9) still gets a head.
        guard context.deliverHeadIfNeeded(status: status) else { throw context.failure ?? CancellationError() }
        return status
    }

    private static func configureMethod(_ easy: CurlEasy, _ request: CurlRequest) throws(CurlError) {
        let method = request.method.uppercased()
        switch (method, request.body) {
        case ("GET", .none):
            try easy.set(CURLOPT_HTTPGET, 1)
        case ("HEAD", .none):
            try easy.set(CURLOPT_NOBODY, 1)
        case ("DELETE", .none), ("OPTIONS", .none):
            try easy.set(CURLOPT_CUSTOMREQUEST, method)
        default:
            // Any other method, or any body: an upload through the read callback, with the method named explicitly.
            // A body of unknown length goes out chunked; an empty one as `Content-Length: 0`.
            try easy.set(CURLOPT_UPLOAD, 1)
            try easy.set(CURLOPT_INFILESIZE_LARGE, offset: request.body.length ?? -1)
            try easy.set(CURLOPT_UPLOAD_BUFFERSIZE, min(max(request.bufferSize, 16 * 1024), 2 * 1024 * 1024))
            if method != "PUT" { try easy.set(CURLOPT_CUSTOMREQUEST, method) }
        }
    }

    private static func configureTimeouts(_ easy: CurlEasy, _ timeouts: CurlTimeouts) throws(CurlError) {
        if let connect = timeouts.connect { try easy.set(CURLOPT_CONNECTTIMEOUT_MS, milliseconds(connect)) }
        if let total = timeouts.total { try easy.set(CURLOPT_TIMEOUT_MS, milliseconds(total)) }
        if let idle = timeouts.idle {
            // "Idle" = below 1 byte/s for the whole period; libcurl measures it in whole seconds.
            try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
            try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(idle.components.seconds)))
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    private static func kind(of code: CURLcode) -> CurlError.Kind {
        switch code {
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .cannotResolveHost
        case CURLE_COULDNT_CONNECT: .cannotConnect
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE: .connectionLost
        case CURLE_ABORTED_BY_CALLBACK, CURLE_WRITE_ERROR, CURLE_READ_ERROR: .aborted
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL: .badURL
        default: .other
        }
    }
}
