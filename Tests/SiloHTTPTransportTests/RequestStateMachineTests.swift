import SiloHTTP
import Testing

/// A sink that records nothing; the machine only hands it back.
private final class DummySink: RequestBodySink {
    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? { nil }
    func finish() -> HTTPResponse { HTTPResponse(status: 201) }
    func abort() {}
    func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { nil }
}

/// The shared request machine on its own: events in, actions out, no sockets.
@Suite struct RequestStateMachineTests {
    private func started(
        _ disposition: RequestDisposition, hasBody: Bool, awaitsContinue: Bool = false, bound: Int64 = 100
    ) -> (RequestStateMachine, RequestStateMachine.Action) {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: bound)
        guard case .callBegin = machine.headArrived(hasBody: hasBody, awaitsContinue: awaitsContinue) else {
            Issue.record("head not taken")
            return (machine, .closeConnection)
        }
        #expect(machine.callRunning)
        let action = machine.began(disposition)
        return (machine, action)
    }

    private func response(_ action: RequestStateMachine.Action) -> (HTTPResponse, RequestStateMachine.Closing)? {
        if case .respond(let response, let closing, _) = action { return (response, closing) }
        return nil
    }

    @Test func answerWithoutBodyIsSentWhenTheBodyEnds() {
        var (machine, first) = started(.respond(HTTPResponse(status: 200)), hasBody: false)
        guard case .proceed = first else {
            Issue.record("answered at begin")
            return
        }
        let answer = response(machine.bodyEnded())
        #expect(answer?.0.status == 200)
        #expect(answer?.1 == .asNegotiated)
        let completion = machine.completed()
        #expect(completion.abort == nil)
        #expect(completion.endsRequest)
        #expect(machine.isIdle)
    }

    @Test func refusalOfAnAwaitedBodyIsSentAtOnceAndLingers() {
        var (machine, action) = started(.respond(HTTPResponse(status: 403)), hasBody: true, awaitsContinue: true)
        #expect(response(action)?.0.status == 403)
        #expect(response(action)?.1 == .lingering)
        guard case .discard = machine.bodyChunk(count: 10) else {
            Issue.record("a body sent anyway is not dropped")
            return
        }
        #expect(machine.completed().abort == nil)
    }

    @Test func stagedResetIsSentAtOnce() {
        var reset = HTTPResponse(status: 200)
        reset.transportFault = .resetConnection
        let (_, action) = started(.respond(reset), hasBody: true)
        #expect(response(action)?.0.transportFault == .resetConnection)
    }

    @Test func bodyGoesToTheSinkOneCallAtATimeThenFinish() {
        let sink = DummySink()
        var (machine, action) = started(.readBody(sink), hasBody: true, awaitsContinue: true)
        guard case .readBody(sendContinue: true) = action else {
            Issue.record("expected readBody with 100 Continue")
            return
        }
        for _ in 0..<3 {
            guard case .deliver(let target) = machine.bodyChunk(count: 10) else {
                Issue.record("not delivered")
                return
            }
            #expect(target === sink)
            #expect(machine.callRunning)
            // A second chunk while the sink still has the first is refused: calls never overlap.
            guard case .closeConnection = machine.bodyChunk(count: 1) else {
                Issue.record("overlapping delivery")
                return
            }
            guard case .proceed = machine.receiveReturned(nil) else {
                Issue.record("expected proceed")
                return
            }
        }
        guard case .finish(let target) = machine.bodyEnded() else {
            Issue.record("not finished")
            return
        }
        #expect(target === sink)
        #expect(response(machine.finishReturned(HTTPResponse(status: 201)))?.0.status == 201)
        // finish was called, so completion must not abort.
        let completion = machine.completed()
        #expect(completion.abort == nil)
        #expect(completion.endsRequest)
    }

    @Test func noContinueWithoutBodyOrWithoutExpect() {
        let (_, withoutExpect) = started(.readBody(DummySink()), hasBody: true)
        guard case .readBody(sendContinue: false) = withoutExpect else {
            Issue.record("100 Continue without Expect")
            return
        }
        let (_, withoutBody) = started(.readBody(DummySink()), hasBody: false, awaitsContinue: true)
        guard case .readBody(sendContinue: false) = withoutBody else {
            Issue.record("100 Continue without a body")
            return
        }
    }

    @Test func earlyAnswerFromTheSinkDropsTheRestClosesAndAbortsAtTheEnd() {
        let sink = DummySink()
        var (machine, _) = started(.readBody(sink), hasBody: true)
        _ = machine.bodyChunk(count: 10)
        _ = machine.receiveReturned(HTTPResponse(status: 413))
        guard case .discard = machine.bodyChunk(count: 60) else {
            Issue.record("not discarded")
            return
        }
        guard case .respond(let answer, _, let gaveUp) = machine.bodyEnded() else {
            Issue.record("not answered")
            return
        }
        #expect(answer.status == 413)
        #expect(answer.headers["Connection"] == "close")
        #expect(gaveUp === sink)
        // Aborted once, with the answer: not again at completion.
        #expect(machine.completed().abort == nil)
    }

    @Test func tooMuchToDropClosesTheConnectionAndAbortsAtCompletion() {
        let sink = DummySink()
        var (machine, _) = started(.readBody(sink), hasBody: true)
        _ = machine.bodyChunk(count: 1)
        _ = machine.receiveReturned(HTTPResponse(status: 413))
        guard case .discard = machine.bodyChunk(count: 100) else {
            Issue.record("not discarded")
            return
        }
        guard case .closeConnection = machine.bodyChunk(count: 1) else {
            Issue.record("not closed")
            return
        }
        #expect(machine.completed().abort === sink)
    }

    @Test func clientGoneMidBodyAbortsTheSinkOnce() {
        let sink = DummySink()
        var (machine, _) = started(.readBody(sink), hasBody: true)
        _ = machine.bodyChunk(count: 10)
        _ = machine.receiveReturned(nil)
        let completion = machine.completed()
        #expect(completion.abort === sink)
        #expect(!completion.callRunning)
        let again = machine.completed()
        #expect(again.abort == nil)
        #expect(!again.endsRequest)
    }

    @Test func clientGoneWhileTheSinkReceivesAbortsWhenTheCallReturns() {
        let sink = DummySink()
        var (machine, _) = started(.readBody(sink), hasBody: true)
        _ = machine.bodyChunk(count: 10)
        let completion = machine.completed()
        // Not now: the sink is inside `receive` on another thread.
        #expect(completion.abort == nil)
        #expect(completion.callRunning)
        #expect(completion.endsRequest)
        guard case .abort(let target) = machine.receiveReturned(nil) else {
            Issue.record("not aborted when the call returned")
            return
        }
        #expect(target === sink)
        #expect(machine.completed().abort == nil)
    }

    @Test func clientGoneDuringBeginAbortsTheSinkItReturnsOrDropsTheAnswer() {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: 100)
        _ = machine.headArrived(hasBody: true, awaitsContinue: false)
        #expect(machine.completed().callRunning)
        let sink = DummySink()
        guard case .abort(let target) = machine.began(.readBody(sink)) else {
            Issue.record("sink from an abandoned begin not aborted")
            return
        }
        #expect(target === sink)

        var other = RequestStateMachine(maxDiscardedBodyBytes: 100)
        _ = other.headArrived(hasBody: false, awaitsContinue: false)
        _ = other.completed()
        guard case .drop(let dropped) = other.began(.respond(HTTPResponse(status: 200))) else {
            Issue.record("answer of an abandoned begin not dropped")
            return
        }
        #expect(dropped.status == 200)
    }

    @Test func clientGoneDuringFinishDropsTheAnswerWithoutAbort() {
        var (machine, _) = started(.readBody(DummySink()), hasBody: false)
        _ = machine.bodyEnded()
        let completion = machine.completed()
        #expect(completion.abort == nil)
        #expect(completion.callRunning)
        guard case .drop = machine.finishReturned(HTTPResponse(status: 201)) else {
            Issue.record("answer of an abandoned finish not dropped")
            return
        }
    }

    @Test func malformedBodyAbortsTheSink() {
        let sink = DummySink()
        var (machine, _) = started(.readBody(sink), hasBody: true)
        guard case .abort(let target) = machine.bodyFailed() else {
            Issue.record("not aborted")
            return
        }
        #expect(target === sink)
        #expect(machine.completed().abort == nil)
    }

    @Test func requestThatNeverReachedTheHandlerIsNotInFlight() {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: 100)
        let completion = machine.completed()
        #expect(completion.abort == nil)
        #expect(!completion.endsRequest)
    }

    @Test func headCannotArriveDuringARequest() {
        var (machine, _) = started(.readBody(DummySink()), hasBody: true)
        guard case .closeConnection = machine.headArrived(hasBody: false, awaitsContinue: false) else {
            Issue.record("second head accepted")
            return
        }
        _ = machine.completed()
        guard case .callBegin = machine.headArrived(hasBody: false, awaitsContinue: false) else {
            Issue.record("keep-alive head refused")
            return
        }
    }
}
