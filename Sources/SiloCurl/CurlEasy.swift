internal import CCurl

/// libcurl's process-wide setup, done once before the first handle (Swift runs global initialisers exactly once,
/// thread-safely). Never torn down: handles may outlive any scope we could tie cleanup to.
private let curlGlobalInit: Int = Int(curl_global_init(Int(CURL_GLOBAL_ALL)).rawValue)

/// Owns one `CURL *` easy handle; freed in deinit. Confined to the thread running its transfer.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    /// `CURLOPT_ERRORBUFFER` target: libcurl writes into it until the handle is cleaned up, so it lives as long.
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init() throws(CurlError) {
        guard curlGlobalInit == 0, let handle = curl_easy_init() else {
            throw CurlError(code: curlGlobalInit, message: "curl_easy_init failed", kind: .other)
        }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Clears every option for the next transfer but keeps the handle's open connections and caches, so the next
    /// request to the same host reuses a kept-alive connection.
    func reset() throws(CurlError) {
        curl_easy_reset(handle)
        errorBuffer[0] = 0
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
    }

    /// The message libcurl left for the last failure, or its generic text for `code`.
    func message(for code: CURLcode) -> String {
        let detail = String(cString: errorBuffer)
        return detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    }

    func set(_ option: CURLoption, _ value: Int) throws(CurlError) {
        try check(silo_curl_setopt_long(handle, option, value), option)
    }

    func set(_ option: CURLoption, offset value: Int64) throws(CurlError) {
        try check(silo_curl_setopt_off(handle, option, curl_off_t(value)), option)
    }

    /// libcurl copies strings passed to setopt (since 7.17), so `value` need not outlive the call.
    func set(_ option: CURLoption, _ value: String) throws(CurlError) {
        try check(silo_curl_setopt_string(handle, option, value), option)
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(CurlError) {
        try check(silo_curl_setopt_pointer(handle, option, value), option)
    }

    /// libcurl does not copy the list: `list` must stay alive until the transfer ends.
    func set(_ option: CURLoption, list: CurlStringList) throws(CurlError) {
        try check(silo_curl_setopt_slist(handle, option, list.head), option)
    }

    func set(_ option: CURLoption, write callback: curl_write_callback) throws(CurlError) {
        try check(silo_curl_setopt_write_callback(handle, option, callback), option)
    }

    func setRead(_ callback: curl_read_callback) throws(CurlError) {
        try check(silo_curl_setopt_read_callback(handle, callback), CURLOPT_READFUNCTION)
    }

    func setProgress(_ callback: curl_xferinfo_callback) throws(CurlError) {
        try check(silo_curl_setopt_xferinfo_callback(handle, callback), CURLOPT_XFERINFOFUNCTION)
    }

    func responseCode() -> Int {
        var code = 0
        _ = silo_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code)
        return code
    }

    /// Runs the transfer on the calling thread until it finishes, fails or a callback aborts it.
    func perform() -> CURLcode {
        errorBuffer[0] = 0
        return curl_easy_perform(handle)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(CurlError) {
        guard code != CURLE_OK else { return }
        throw CurlError(
            code: Int(code.rawValue), message: "curl_easy_setopt(\(option.rawValue)): \(message(for: code))",
            kind: code == CURLE_URL_MALFORMAT ? .badURL : .other)
    }
}

@available(*, unavailable) extension CurlEasy: Sendable {}

/// Owns a `curl_slist` (request headers); freed in deinit.
final class CurlStringList {
    private(set) var head: UnsafeMutablePointer<curl_slist>?

    init(_ strings: [String]) throws(CurlError) {
        for string in strings {
            guard let appended = curl_slist_append(head, string) else {
                throw CurlError(
                    code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append failed", kind: .other)
            }
            head = appended
        }
    }

    deinit { curl_slist_free_all(head) }
}

@available(*, unavailable) extension CurlStringList: Sendable {}
