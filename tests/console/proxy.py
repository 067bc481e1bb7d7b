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
            connection = {"cut": False}
            threading.Thread(target=self._pump_up, args=(client, upstream, connection), daemon=True).start()
            threading.Thread(target=self._pump_down, args=(upstream, client, connection), daemon=True).start()

    def _pump_up(self, client, upstream, connection):
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
                    self._cut(client, upstream, connection)
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

    @staticmethod
    def _cut(client, upstream, connection):
        """Silo sees the body end early; the browser sees an answer begin and break off. (Closed without any answer,
        Chromium would silently resend the request on another connection and the page would never know.) The rest
        of the browser's chunk is read and dropped first, so that the browser reads the answer's head before the
        close rather than failing its send."""
        connection["cut"] = True
        try:
            client.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        except OSError:
            pass
        try:
            upstream.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        client.settimeout(1.0)
        try:
            while client.recv(64 << 10):
                pass
        except OSError:
            pass  # The browser has sent its chunk and waits for the rest of the answer.

    @staticmethod
    def _pump_down(upstream, client, connection):
        try:
            while not connection["cut"]:
                data = upstream.recv(64 << 10)
                if not data or connection["cut"]:
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            if not connection["cut"]:
                try:
                    client.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
