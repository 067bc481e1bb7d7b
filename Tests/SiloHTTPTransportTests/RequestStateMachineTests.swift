import SiloHTTP
import Testing

@testable import SiloMicroHTTPD

/// A sink that records nothing; the machine only hands it back.
private final class DummySink: RequestBodySink {
    func receive(_ chunk: UnsafeRawBufferPointer) -> HTTPResponse? { nil }
    func finish() -> HTTPResponse { HTTPResponse(status: 201) }
    func abort() {}
}

@Suite struct RequestStateMachineTests {
    private func status(_ step: RequestStateMachine.Step) -> Int? {
        if case .queue(let response) = step { return response.status }
        return nil
    }

    @Test func answerWithoutBodyIsQueuedOnTheSecondCall() {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: 100)
        #expect(machine.isAwaitingHead)
        let first = machine.began(
            .respond(HTTPResponse(status: 200)), requestHasBody: false, clientAwaitsContinue: false)
        guard case .proceed = first else {
            Issue.record("queued on the first call")
            return
        }
        guard case .queue(let response) = machine.bodyEnded() else {
            Issue.record("not queued")
            return
        }
        #expect(response.status == 200)
        let completion = machine.completed()
        #expect(completion.abort == nil)
        #expect(completion.endsInFlightRequest)
    }

    @Test func refusalOfAnAwaitedBodyIsQueuedAtOnce() {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: 100)
        let step = machine.began(.respond(HTTPResponse(status: 403)), requestHasBody: true, clientAwaitsContinue: true)
        #expect(status(step) == 403)
        #expect(machine.completed().abort == nil)
    }

    @Test func bodyGoesToTheSinkThenFinish() {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: 100)
        let sink = DummySink()
        guard case .proceed = machine.began(.readBody(sink), requestHasBody: true, clientAwaitsContinue: true) else {
            Issue.record("expected proceed")
            return
        }
        for _ in 0..<3 {
            guard case .deliver(let target) = machine.bodyChunk(count: 10) else {
                Issue.record("not delivered")
                return
            }
            #expect(target === sink)
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
        // finish was called, so completion must not abort.
        let completion = machine.completed()
        #expect(completion.abort == nil)
        #expect(completion.endsInFlightRequest)
    }

    @Test func earlyAnswerFromTheSinkDropsTheRestClosesAndAborts() {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: 100)
        let sink = DummySink()
        _ = machine.began(.readBody(sink), requestHasBody: true, clientAwaitsContinue: false)
        _ = machine.bodyChunk(count: 10)
        _ = machine.receiveReturned(HTTPResponse(status: 413))
        guard case .discard = machine.bodyChunk(count: 60) else {
            Issue.record("not discarded")
            return
        }
        guard case .queue(let response) = machine.bodyEnded() else {
            Issue.record("not queued")
            return
        }
        #expect(response.status == 413)
        #expect(response.headers["Connection"] == "close")
        #expect(machine.completed().abort === sink)
    }

    @Test func tooMuchToDropClosesTheConnection() {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: 100)
        _ = machine.began(.respond(HTTPResponse(status: 404)), requestHasBody: true, clientAwaitsContinue: false)
        guard case .discard = machine.bodyChunk(count: 100) else {
            Issue.record("not discarded")
            return
        }
        guard case .closeConnection = machine.bodyChunk(count: 1) else {
            Issue.record("not closed")
            return
        }
    }

    @Test func clientGoneMidBodyAbortsTheSinkOnce() {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: 100)
        let sink = DummySink()
        _ = machine.began(.readBody(sink), requestHasBody: true, clientAwaitsContinue: false)
        _ = machine.bodyChunk(count: 10)
        _ = machine.receiveReturned(nil)
        #expect(machine.completed().abort === sink)
        let again = machine.completed()
        #expect(again.abort == nil)
        #expect(!again.endsInFlightRequest)
    }

    @Test func requestThatNeverReachedTheHandlerIsNotInFlight() {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: 100)
        let completion = machine.completed()
        #expect(completion.abort == nil)
        #expect(!completion.endsInFlightRequest)
    }

    @Test func headCannotArriveTwice() {
        var machine = RequestStateMachine(maxDiscardedBodyBytes: 100)
        _ = machine.began(.respond(HTTPResponse(status: 200)), requestHasBody: false, clientAwaitsContinue: false)
        guard
            case .closeConnection = machine.began(
                .respond(HTTPResponse(status: 200)), requestHasBody: false, clientAwaitsContinue: false)
        else {
            Issue.record("second head accepted")
            return
        }
    }
}
