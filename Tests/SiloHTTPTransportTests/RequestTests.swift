import SiloHTTP
import SiloTesting
import Testing

@Suite struct RequestTests {
    @Test(arguments: Engine.allCases) func rawPathAndQueryArriveUndecoded(engine: Engine) throws {
        try withServer(engine, { head in text("\(head.rawPath)\n\(head.rawQuery)") }) { _, client in
            let response = try client.send(method: "GET", target: "/v0/b/x/o/a%2Fb%20c?name=a+b&x=%2B")
            #expect(response.status == 200)
            #expect(response.text == "/v0/b/x/o/a%2Fb%20c\nname=a+b&x=%2B")

            let odd = try client.send(method: "GET", target: "/o/$,=:@%25%3F;x?a=$,=:@&b=%2F%3D")
            #expect(odd.text == "/o/$,=:@%25%3F;x\na=$,=:@&b=%2F%3D")

            let bare = try client.send(method: "GET", target: "/plain")
            #expect(bare.text == "/plain\n")
        }
    }

    @Test(arguments: Engine.allCases) func headersArriveInOrder(engine: Engine) throws {
        try withServer(
            engine,
            { head in
                text(head.headers.fields.map { "\($0.name)=\($0.value)" }.joined(separator: "|"))
            }
        ) { _, client in
            let response = try client.send(
                method: "GET", target: "/h",
                headers: [
                    "Host": "bucket.example:1234", "X-One": "1", "Authorization": "Firebase abc", "x-one": "again",
                ])
            #expect(response.text == "Host=bucket.example:1234|X-One=1|Authorization=Firebase abc|x-one=again")
        }
    }

    @Test(arguments: Engine.allCases, ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
    func methodsArrive(engine: Engine, method: String) throws {
        try withServer(engine, { head in text("\(head.method) \(head.version)") }) { _, client in
            let response = try client.send(method: method, target: "/m")
            #expect(response.status == 200)
            #expect(response.text == "\(method) HTTP/1.1")
        }
    }

    @Test(arguments: Engine.allCases) func tenMiBUploadArrivesInOrder(engine: Engine) throws {
        let recorder = Recorder()
        let body = patternBytes(10 * 1024 * 1024)
        let expectedSum = body.reduce(UInt64(0)) { $0 + UInt64($1) }
        try withServer(engine, { _ in .readBody(PatternSink(recorder: recorder)) }) { _, client in
            let response = try client.send(method: "PUT", target: "/upload", body: body)
            #expect(response.status == 201)
            #expect(response.text == "\(body.count) \(expectedSum) true")
            #expect(!recorder.contains("abort"))
        }
        print(
            "upload chunk sizes (Content-Length, 64 KiB connection memory):",
            recorder.all.filter { $0.hasPrefix("chunks") })
    }

    @Test(arguments: Engine.allCases) func chunkedUploadArrivesInOrder(engine: Engine) throws {
        let recorder = Recorder()
        let body = patternBytes(3 * 1024 * 1024 + 17)
        let expectedSum = body.reduce(UInt64(0)) { $0 + UInt64($1) }
        try withServer(engine, { _ in .readBody(PatternSink(recorder: recorder)) }) { _, client in
            let response = try client.send(
                method: "POST", target: "/upload", body: body, bodyMode: .chunked(pieceSize: 100_000))
            #expect(response.status == 201)
            #expect(response.text == "\(body.count) \(expectedSum) true")
            // The connection stays usable after a chunked upload.
            #expect(try client.send(method: "PUT", target: "/again", body: patternBytes(3)).text == "3 3 true")
            #expect(client.connectionsOpened == 1)
        }
        print("upload chunk sizes (chunked):", recorder.all.filter { $0.hasPrefix("chunks") })
    }

    @Test(arguments: Engine.allCases) func sinkCanAnswerEarly(engine: Engine) throws {
        let recorder = Recorder()
        try withServer(engine, { _ in .readBody(PatternSink(recorder: recorder, failAfter: 100_000)) }) { _, client in
            let response = try client.send(method: "PUT", target: "/big", body: patternBytes(1024 * 1024))
            #expect(response.status == 413)
            #expect(response.text == "too large")
            #expect(response.headers["Connection"]?.lowercased() == "close")
            // The sink never saw finish, so it is aborted once the request completes.
            #expect(recorder.waitFor("abort"))
            #expect(!recorder.contains("finish"))
            // A new connection works.
            #expect(try client.send(method: "PUT", target: "/small", body: [1]).status == 201)
        }
    }

    @Test(arguments: Engine.allCases) func answerBeforeBodyDropsTheBodyAndKeepsTheConnection(engine: Engine) throws {
        try withServer(engine, { _ in text("no such bucket", status: 404) }) { _, client in
            let response = try client.send(method: "PUT", target: "/nope", body: patternBytes(300_000))
            #expect(response.status == 404)
            #expect(response.text == "no such bucket")
            #expect(try client.send(method: "GET", target: "/next").status == 404)
            #expect(client.connectionsOpened == 1)
        }
    }

    @Test(arguments: Engine.allCases) func expectContinueGetsTheBodySent(engine: Engine) throws {
        let recorder = Recorder()
        try withServer(engine, { _ in .readBody(PatternSink(recorder: recorder)) }) { _, client in
            let body = patternBytes(200_000)
            let response = try client.send(method: "PUT", target: "/c", headers: ["Expect": "100-continue"], body: body)
            #expect(response.status == 201)
            #expect(response.text.hasPrefix("\(body.count) "))
        }
    }

    @Test(arguments: Engine.allCases) func expectContinueRefusedWithoutTheBody(engine: Engine) throws {
        try withServer(engine, { _ in text("denied", status: 403) }) { _, client in
            // The client waits for 100 Continue; the final answer comes instead and no body is sent.
            let response = try client.send(
                method: "PUT", target: "/c", headers: ["Expect": "100-continue"], body: patternBytes(5_000_000))
            #expect(response.status == 403)
            #expect(response.text == "denied")
        }
    }

    @Test(arguments: Engine.allCases) func clientDisconnectingMidUploadAbortsTheSink(engine: Engine) throws {
        let recorder = Recorder()
        try withServer(engine, { _ in .readBody(PatternSink(recorder: recorder)) }) { server, client in
            try client.sendPartialAndDisconnect(
                method: "PUT", target: "/gone", body: patternBytes(1024 * 1024), sendBytes: 100_000)
            #expect(recorder.waitFor("abort"))
            #expect(!recorder.contains("finish"))
            #expect(waitUntil { server.requestsInFlight == 0 })
        }
    }

    @Test(arguments: Engine.allCases) func clientDisconnectingMidChunkedUploadAbortsTheSink(engine: Engine) throws {
        let recorder = Recorder()
        try withServer(engine, { _ in .readBody(PatternSink(recorder: recorder)) }) { server, client in
            let piece = patternBytes(70_000)
            let head = "PUT /gone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            try client.sendRaw(
                Array(head.utf8) + Array("\(String(piece.count, radix: 16))\r\n".utf8) + piece + [13, 10])
            client.disconnect()
            #expect(recorder.waitFor("abort"))
            #expect(!recorder.contains("finish"))
            #expect(waitUntil { server.requestsInFlight == 0 })
        }
    }
}

/// Polls `condition` every 5 ms for up to `seconds`.
func waitUntil(seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    var waited = 0.0
    while waited < seconds {
        if condition() { return true }
        usleep(5_000)
        waited += 0.005
    }
    return condition()
}

#if canImport(Glibc)
import Glibc
#endif
