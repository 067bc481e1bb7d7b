"""Refuses, from Python, every connection outside 127.0.0.0/8 and ::1, and every name that does not resolve to
loopback: what the pytest plugins around suites written for Google's servers (tests/conformance, tests/gcs-system)
install, so none of their traffic may leave the machine. `install(label)` once per process; `label` names the
harness in the refusals."""
import ipaddress
import socket


def _loopback(host):
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def install(label):
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
            if not _loopback(str(address[0])):
                raise ConnectionRefusedError(f"{label}: no connection outside loopback ({address[0]})")

    def connect(self, address):
        check(self, address)
        return real_connect(self, address)

    def connect_ex(self, address):
        check(self, address)
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and not _loopback(host if isinstance(host, str) else host.decode()):
            raise socket.gaierror(socket.EAI_NONAME, f"{label}: only loopback names resolve ({host})")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect
    socket.socket.connect_ex = connect_ex
    socket.getaddrinfo = getaddrinfo
