"""A byte-transparent TCP relay on loopback that records every HTTP/1.1 exchange passing through it.

The clients talk to the relay as if it were Silo; the relay forwards each byte unchanged in both directions (so the
framing Silo sees — chunked or not, CRLF or LF in a multipart body — is exactly what the client sent) and parses a copy
of the stream on the side. Each exchange becomes one JSON line: time, connection, method, target, request headers,
the first bytes of the request body (latin-1, so every byte survives the JSON escaping: \\r\\n vs \\n stays visible),
its length and framing, then status, response headers, the first bytes of the response body.

Used by run.py (start_relay); also runnable alone: python capture.py LISTEN_PORT UPSTREAM_PORT LOG.jsonl
"""
import json
import socket
import sys
import threading
import time

REQUEST_BODY_KEEP = 1536
RESPONSE_BODY_KEEP = 2048


class _Parser:
    """Incremental HTTP/1.1 message parser for one direction of one connection. feed() returns finished messages."""

    def __init__(self, is_request, keep, pending_methods=None, on_head=None):
        self.on_head = on_head  # called with each message as soon as its head is parsed
        self.is_request = is_request
        self.keep = keep
        self.pending_methods = pending_methods  # responses: the request methods still waiting for an answer
        self.buf = b""
        self.state = "head"
        self.msg = None
        self.remaining = 0
        self.done = []

    def _start_body(self):
        m = self.msg
        h = {k.lower(): v for k, v in m["headers"]}
        te = h.get("transfer-encoding", "").lower()
        if not self.is_request:
            status = m["status"]
            method = self.pending_methods[0] if self.pending_methods else "GET"
            if 100 <= status < 200 or status in (204, 304) or method == "HEAD":
                m["framing"] = "none"
                return self._finish()
        if "chunked" in te:
            m["framing"] = "chunked"
            self.state = "chunk-size"
        elif "content-length" in h:
            try:
                self.remaining = int(h["content-length"])
            except ValueError:
                self.remaining = 0
            m["framing"] = "length"
            if self.remaining == 0:
                return self._finish()
            self.state = "length"
        elif self.is_request:
            m["framing"] = "none"
            return self._finish()
        else:
            m["framing"] = "until-close"
            self.state = "until-close"

    def _body(self, data):
        m = self.msg
        m["body_len"] += len(data)
        room = self.keep - len(m["_body"])
        if room > 0:
            m["_body"] += data[:room]

    def _finish(self):
        m = self.msg
        m["body"] = m["_body"].decode("latin-1")
        m["body_truncated"] = m["body_len"] > len(m["body"])
        if not self.is_request and 100 <= m["status"] < 200:
            m["interim"] = True
        self.done.append(m)
        self.msg = None
        self.state = "head"

    def close(self):
        if self.msg is not None and self.state == "until-close":
            self._finish()
        out, self.done = self.done, []
        return out

    def feed(self, data):
        self.buf += data
        while True:
            if self.state == "head":
                # Tolerate leading CRLFs between messages.
                self.buf = self.buf.lstrip(b"\r\n") if self.buf[:1] in (b"\r", b"\n") else self.buf
                end = self.buf.find(b"\r\n\r\n")
                sep = 4
                if end < 0:
                    end = self.buf.find(b"\n\n")
                    sep = 2
                if end < 0:
                    if len(self.buf) > 1 << 20:  # not HTTP; stop parsing this direction
                        self.state = "dead"
                    break
                head = self.buf[:end].decode("latin-1")
                self.buf = self.buf[end + sep:]
                lines = head.replace("\r\n", "\n").split("\n")
                m = {"t": time.time(), "headers": [], "_body": b"", "body_len": 0}
                first = lines[0].split(" ", 2)
                if self.is_request:
                    m["method"] = first[0]
                    m["target"] = first[1] if len(first) > 1 else ""
                else:
                    try:
                        m["status"] = int(first[1])
                    except (IndexError, ValueError):
                        m["status"] = 0
                    m["reason"] = first[2] if len(first) > 2 else ""
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        m["headers"].append((k.strip(), v.strip()))
                self.msg = m
                if self.on_head:
                    self.on_head(m)
                self._start_body()
            elif self.state == "length":
                if not self.buf:
                    break
                take = self.buf[: self.remaining]
                self.buf = self.buf[len(take):]
                self._body(take)
                self.remaining -= len(take)
                if self.remaining == 0:
                    self._finish()
            elif self.state == "chunk-size":
                nl = self.buf.find(b"\n")
                if nl < 0:
                    break
                line = self.buf[:nl].strip().split(b";")[0]
                self.buf = self.buf[nl + 1:]
                try:
                    size = int(line, 16)
                except ValueError:
                    self.state = "dead"
                    break
                self.msg["chunks"] = self.msg.get("chunks", 0) + 1
                if size == 0:
                    self.state = "trailer"
                else:
                    self.remaining = size
                    self.state = "chunk-data"
            elif self.state == "chunk-data":
                if not self.buf:
                    break
                take = self.buf[: self.remaining]
                self.buf = self.buf[len(take):]
                self._body(take)
                self.remaining -= len(take)
                if self.remaining == 0:
                    self.state = "chunk-end"
            elif self.state == "chunk-end":
                nl = self.buf.find(b"\n")
                if nl < 0:
                    break
                self.buf = self.buf[nl + 1:]
                self.state = "chunk-size"
            elif self.state == "trailer":
                nl = self.buf.find(b"\n")
                if nl < 0:
                    break
                line = self.buf[:nl].strip()
                self.buf = self.buf[nl + 1:]
                if not line:
                    self._finish()
            elif self.state == "until-close":
                self._body(self.buf)
                self.buf = b""
                break
            else:  # dead
                self.buf = b""
                break
        out, self.done = self.done, []
        return out


class Relay:
    def __init__(self, upstream_port, log_path, listen_port=0):
        self.upstream_port = upstream_port
        self.log = open(log_path, "a", buffering=1)
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", listen_port))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.conn_id = 0
        self.closed = False

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self):
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.conn_id += 1
            threading.Thread(target=self._serve, args=(client, self.conn_id), daemon=True).start()

    def _write(self, record):
        with self.lock:
            self.log.write(json.dumps(record) + "\n")

    def _serve(self, client, cid):
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        except OSError as e:
            self._write({"t": time.time(), "conn": cid, "error": f"upstream connect: {e}"})
            client.close()
            return
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending = []  # requests waiting for their final response, from the moment their head is parsed
        state_lock = threading.Lock()
        resp_parser = _Parser(False, RESPONSE_BODY_KEEP, pending_methods=[])

        def on_request_head(m):
            with state_lock:
                pending.append(m)
                resp_parser.pending_methods.append(m["method"])

        req_parser = _Parser(True, REQUEST_BODY_KEEP, on_head=on_request_head)

        def on_requests(msgs):
            pass  # already pending; their bodies fill in as they arrive

        def on_responses(msgs):
            with state_lock:
                for r in msgs:
                    if r.get("interim"):
                        if pending:
                            pending[0].setdefault("interim", []).append(r["status"])
                        continue
                    req = pending.pop(0) if pending else {"method": "?", "target": "?", "t": r["t"]}
                    if resp_parser.pending_methods:
                        resp_parser.pending_methods.pop(0)
                    self._write(_record(cid, req, r))

        def pump(src, dst, parser, on_msgs):
            # EOF on one side is passed on as a half-close (the other direction keeps flowing); an error ends both.
            how = socket.SHUT_WR
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    # Parsed before it is forwarded: a request is pending before its answer can arrive.
                    try:
                        on_msgs(parser.feed(data))
                    except Exception as e:  # the relay must never break the traffic it records
                        parser.state = "dead"
                        self._write({"t": time.time(), "conn": cid, "error": f"parse: {e!r}"})
                    dst.sendall(data)
            except OSError:
                how = socket.SHUT_RDWR
            finally:
                try:
                    on_msgs(parser.close())
                except Exception:
                    pass
                try:
                    dst.shutdown(how)
                except OSError:
                    pass
                if how == socket.SHUT_RDWR:
                    try:
                        src.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        t = threading.Thread(target=pump, args=(upstream, client, resp_parser, on_responses), daemon=True)
        t.start()
        pump(client, upstream, req_parser, on_requests)
        t.join(timeout=120)
        with state_lock:
            for req in pending:  # requests the server never answered
                self._write(_record(cid, req, None))
        client.close()
        upstream.close()


def _record(cid, req, resp):
    rec = {
        "t": req["t"], "conn": cid, "method": req.get("method"), "target": req.get("target"),
        "req_headers": req.get("headers", []), "req_framing": req.get("framing"),
        "req_chunks": req.get("chunks"), "req_body_len": req.get("body_len", 0),
        "req_body": req.get("_body", b"").decode("latin-1"),
    }
    if req.get("interim"):
        rec["interim"] = req["interim"]
    if resp is None:
        rec["status"] = None
    else:
        rec.update({
            "t_resp": resp["t"], "status": resp["status"], "resp_headers": resp["headers"],
            "resp_body_len": resp["body_len"], "resp_body": resp["body"],
        })
    return rec


def start_relay(upstream_port, log_path):
    return Relay(upstream_port, log_path).start()


if __name__ == "__main__":
    r = Relay(int(sys.argv[2]), sys.argv[3], listen_port=int(sys.argv[1])).start()
    print(f"relay on 127.0.0.1:{r.port} -> {r.upstream_port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        r.stop()
