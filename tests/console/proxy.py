"""A TCP proxy between the browser and Silo that can make a big upload observable and interrupt it: on a connection
that has carried more than `throttle_after` bytes from the browser it slows those bytes to `rate` bytes/s (so the
test sees the progress bar move), and once armed it cuts the next `times` connections that carry more than
`after_bytes` bytes (a real dropped connection in the middle of an upload chunk)."""
import socket
import threading
import time


class Proxy:
    def __init__(self, upstream_port, rate=12 << 20, throttle_after=1 << 20, drop_after=None):
        self.upstream_port = upstream_port
        self.rate = rate
        self.throttle_after = throttle_after
        self.drop_after = drop_after
        self.drops_left = 1 if drop_after is not None else 0
        self.dropped = 0
        self.lock = threading.Lock()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm_drop(self, after_bytes, times=1):
        with self.lock:
            self.drop_after = after_bytes
            self.drops_left = times

    def close(self):
        self.closed = True
        self.listener.close()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._pump_up, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump_down, args=(upstream, client), daemon=True).start()

    def _pump_up(self, client, upstream):
        sent = 0
        try:
            while True:
                data = client.recv(64 << 10)
                if not data:
                    break
                sent += len(data)
                with self.lock:
                    drop = self.drop_after is not None and sent > self.drop_after
                    if drop:
                        self.dropped += 1
                        self.drops_left -= 1
                        if self.drops_left <= 0:
                            self.drop_after = None
                if drop:
                    # Cut both sides: Silo sees a body end early; the browser sees an answer begin and break off.
                    # (Cut without any answer, Chromium would silently resend the request on another connection.)
                    try:
                        client.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
                    except OSError:
                        pass
                    for s in (client, upstream):
                        try:
                            s.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                    break
                upstream.sendall(data)
                if sent > self.throttle_after:
                    time.sleep(len(data) / self.rate)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                try:
                    s.close()
                except OSError:
                    pass

    def _pump_down(self, upstream, client):
        try:
            while True:
                data = upstream.recv(64 << 10)
                if not data:
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            try:
                client.shutdown(socket.SHUT_WR)
            except OSError:
                pass
