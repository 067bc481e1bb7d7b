internal import CCurl

// libcurl's callbacks: free functions, with no captures and no actor isolation (a capturing closure cannot be a C
// function pointer, and an isolated one would trap when libcurl calls it on its own thread).
//
// Ownership rule for every `userdata` / `clientp` below: it is `Unmanaged.passUnretained` of the transfer's
// `CurlTransferContext`, which `CurlTransfer.run` keeps alive (withExtendedLifetime) across the one
// `curl_easy_perform` during which libcurl calls these functions, so taking it unretained is safe.

private func context(_ pointer: UnsafeMutableRawPointer?) -> CurlTransferContext {
    Unmanaged<CurlTransferContext>.fromOpaque(pointer!).takeUnretainedValue()
}

/// CURLOPT_WRITEFUNCTION: one piece of the response body. Returning anything but `size * count` aborts.
func curlWriteBody(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    let transfer = context(userdata)
    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
    let ok = transfer.deliverHeadIfNeeded(status: 200) && transfer.deliver { try transfer.handler.receive(body: bytes) }
    return ok ? bytes.count : 0
}

/// CURLOPT_HEADERFUNCTION: one complete header line, CRLF included. Returning anything but `size * count` aborts.
func curlWriteHeader(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    let transfer = context(userdata)
    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
    let line = String(decoding: bytes, as: UTF8.self)
    return transfer.headerLine(line) ? bytes.count : 0
}

/// CURLOPT_READFUNCTION: fills libcurl's buffer with the next request-body bytes; 0 ends the body.
func curlReadBody(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    let transfer = context(userdata)
    guard let source = transfer.source, let buffer else { return 0 }
    let target = UnsafeMutableRawBufferPointer(start: buffer, count: size * count)
    var produced = 0
    guard transfer.deliver({ produced = try source.read(into: target) }) else { return silo_curl_readfunc_abort() }
    return produced
}

/// CURLOPT_XFERINFOFUNCTION: progress, also called about once a second while idle. Non-zero aborts.
func curlProgress(
    _ clientp: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloaded: curl_off_t,
    _ uploadTotal: curl_off_t, _ uploaded: curl_off_t
) -> Int32 {
    let transfer = context(clientp)
    let progress = CurlProgress(
        uploaded: Int64(uploaded), uploadTotal: Int64(uploadTotal), downloaded: Int64(downloaded),
        downloadTotal: Int64(downloadTotal))
    return transfer.deliver { try transfer.handler.progress(progress) } ? 0 : 1
}
