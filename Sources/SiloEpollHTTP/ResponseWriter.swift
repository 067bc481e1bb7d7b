import SiloCore
import SiloHTTP

/// What the transport sends for one response, decided from the response and the request it answers.
struct ResponsePlan {
    /// The `Content-Length` value to send, if any.
    var contentLength: Int64?
    /// The body goes out with chunked framing (length unknown, HTTP/1.1 client).
    var chunked: Bool
    /// Body bytes follow the head (false for HEAD, 1xx, 204 and 304).
    var sendsBody: Bool
    /// The connection closes after this response.
    var closesConnection: Bool

    init(_ response: HTTPResponse, isHeadMethod: Bool, isHTTP10: Bool, keepAlive: Bool, draining: Bool) {
        let status = response.status
        let noContent = status == 204 || (100...199).contains(status)
        let bodyless = isHeadMethod || status == 304 || noContent
        let length = response.body.length
        sendsBody = !bodyless
        var close = !keepAlive || draining
        // An early answer from a body sink carries `Connection: close` (the rest of the body is not read). Headers
        // formatted once hold no transport field (``HTTPHeaders/preformatted()``): no lookup for those.
        if response.headers.wireFormat == nil, let connection = response.headers["Connection"],
            connection.utf8.count == 5,
            equalsIgnoringCase(connection, "close")
        {
            close = true
        }
        chunked = false
        if noContent {
            contentLength = nil
        } else if bodyless {
            // HEAD and 304 describe a body without sending it: the handler may declare its length.
            if case .empty = response.body {
                contentLength = response.headers["Content-Length"].flatMap { Int64($0) } ?? 0
            } else {
                contentLength = length
            }
        } else if let length {
            contentLength = length
        } else if isHTTP10 {
            // HTTP/1.0 has no chunked framing: the end of the body is the end of the connection.
            contentLength = nil
            close = true
        } else {
            contentLength = nil
            chunked = true
        }
        closesConnection = close
    }
}

/// Serializes response heads into a connection's ``OutputBytes``, without building intermediate strings.
enum ResponseWriter {
    /// Returns the names of fields left out because they could not be sent safely (see `HTTPHeaders.isSendable`).
    @discardableResult
    static func appendHead(
        _ response: HTTPResponse, plan: ResponsePlan, isHTTP10: Bool, dateLine: [UInt8], to out: inout OutputBytes
    ) -> [String] {
        var refused: [String] = []
        appendStatusLine(response.status, to: &out)
        var sawDate = false
        if let wire = response.headers.wireFormat {
            // Formatted once for many responses; it holds no Date and no field the transport owns.
            out.append(wire)
        } else {
            for field in response.headers {
                // The transport owns the framing and connection headers: they must match what it sends.
                if HTTPHeaders.isTransportField(field.name) { continue }
                // A CR or LF here would let a stored value split the response: the field is dropped.
                guard HTTPHeaders.isSendable(field) else {
                    refused.append(String(field.name.prefix(64)))
                    continue
                }
                if !sawDate && field.name.utf8.count == 4 && equalsIgnoringCase(field.name, "Date") { sawDate = true }
                out.append(utf8: field.name)
                out.append(": ")
                out.append(utf8: field.value)
                out.append("\r\n")
            }
        }
        if let id = response.requestID {
            if FieldText.isValid(id) {
                out.append("X-Request-Id: ")
                out.append(utf8: id)
                out.append("\r\n")
            } else {
                refused.append("X-Request-Id")
            }
        }
        if !sawDate { out.append(dateLine) }
        if let length = plan.contentLength {
            out.append("Content-Length: ")
            appendDecimal(length, to: &out)
            out.append("\r\n")
        }
        if plan.chunked { out.append("Transfer-Encoding: chunked\r\n") }
        if plan.closesConnection {
            out.append("Connection: close\r\n")
        } else if isHTTP10 {
            out.append("Connection: keep-alive\r\n")
        }
        out.append("\r\n")
        return refused
    }

    /// `HTTP/1.1 NNN Reason\r\n`: one append for the statuses of most answers.
    static func appendStatusLine(_ status: Int, to out: inout OutputBytes) {
        switch status {
        case 200: out.append("HTTP/1.1 200 OK\r\n")
        case 204: out.append("HTTP/1.1 204 No Content\r\n")
        case 206: out.append("HTTP/1.1 206 Partial Content\r\n")
        case 304: out.append("HTTP/1.1 304 Not Modified\r\n")
        case 404: out.append("HTTP/1.1 404 Not Found\r\n")
        default:
            out.append("HTTP/1.1 ")
            appendDecimal(Int64(status), to: &out)
            out.append(byte: 0x20)
            out.append(reasonPhrase(status))
            out.append("\r\n")
        }
    }

    static func appendDecimal(_ value: Int64, to out: inout OutputBytes) {
        guard value > 0 else {
            out.append(byte: 0x30)
            return
        }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            while rest > 0 {
                buffer[19 - count] = UInt8(0x30 + rest % 10)
                rest /= 10
                count += 1
            }
            out.append(UnsafeRawBufferPointer(rebasing: buffer[(20 - count)...]))
        }
    }

    /// Lowercase hexadecimal, for chunk sizes.
    static func appendHex(_ value: Int, to out: inout OutputBytes) {
        let hex: StaticString = "0123456789abcdef"
        var shift = (Int.bitWidth / 4 - 1) * 4
        var started = false
        while shift >= 0 {
            let digit = (value >> shift) & 0xF
            if digit != 0 || started || shift == 0 {
                started = true
                out.append(byte: hex.utf8Start[digit])
            }
            shift -= 4
        }
    }

    static func reasonPhrase(_ status: Int) -> StaticString { HTTPReasonPhrase.of(status) }
}
