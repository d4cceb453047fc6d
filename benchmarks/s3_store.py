"""An S3-like store for benchmarks: a real S3-protocol server on 127.0.0.1 (moto) behind an HTTP
proxy that adds what a remote object store costs and counts what the store did.

The proxy (``LatencyProxy``) relays HTTP/1.1 requests, keep-alive included, one thread per client
connection and one upstream connection each. Per request it

- holds the response's first byte back by ``latency_s`` after the server's response head arrived
  (an object store's time to first byte, added to whatever the server itself took);
- sends the body at most ``bandwidth`` bytes/s on that connection (None: as fast as it comes);
- records the method, what the path is (``gops.lance data``, ``frames.lance data``, manifests,
  listings, ...), the status and the body bytes returned (``requests``).

``server_cpu_seconds(pid)`` reads the server process's CPU time from /proc, so a report can show
when the server, not the client, is the limit (moto is Python: on 2 cores it can be).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from urllib.parse import urlsplit

from benchmarks.tcp_proxy import TcpProxy

CHUNK = 64 << 10


@dataclass
class ProxiedRequest:
    """One relayed request, recorded when its response head arrives from the server; its body
    bytes are counted before they are sent, so a client holding its response sees them counted."""

    method: str
    kind: str  # what the path is: see request_kind
    status: int
    body_bytes: int = 0  # response body bytes relayed to the client


def request_kind(method: str, target: str) -> str:
    """What a request reads or writes, from its method and target (``/bucket/key?query``)."""
    parts = urlsplit(target)
    if method == "GET" and "list-type=" in parts.query:
        return "listing"
    path = parts.path
    for table in ("gops.lance", "frames.lance", "videos.lance"):  # videos.lance: LanceDBDataset's video
        if f"/{table}/" in path:
            for folder, name in (("/data/", "data"), ("/_versions/", "manifests"), ("/_indices/", "indices")):
                if f"/{table}{folder}" in path:
                    return f"{table} {name}"
            if f"/{table}/_transactions/" in path:
                return f"{table} transactions"
            return f"{table} other"
    return "other"


@dataclass(frozen=True)
class StoreFigures:
    """What the store did over a stretch: the requests the proxy relayed (``proxy.requests[mark:]``)
    and the server's CPU seconds (two ``server_cpu_seconds`` readings apart)."""

    requests: tuple[ProxiedRequest, ...]
    server_cpu_s: float

    @property
    def gets(self) -> int:
        return sum(r.method == "GET" for r in self.requests)

    @property
    def body_bytes(self) -> int:
        return sum(r.body_bytes for r in self.requests)

    @property
    def mean_bytes_per_get(self) -> float:
        gets = [r.body_bytes for r in self.requests if r.method == "GET"]
        return sum(gets) / len(gets) if gets else 0.0

    def by_method(self) -> Counter[str]:
        return Counter(r.method for r in self.requests)

    def gets_by_kind(self) -> Counter[str]:
        return Counter(r.kind for r in self.requests if r.method == "GET")

    def bytes_by_kind(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for r in self.requests:
            counts[r.kind] += r.body_bytes
        return counts


def server_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its waited-for children, from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    # fields[0] is the state (field 3): utime, stime, cutime, cstime are fields 14-17.
    ticks = sum(int(value) for value in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


class LatencyProxy(TcpProxy):
    """An HTTP proxy on 127.0.0.1 in front of ``target`` (host, port): a first-byte latency per
    request, a bandwidth cap per connection, and a record of every request.

    >>> with LatencyProxy(("127.0.0.1", 9000), latency_s=0.03) as proxy:  # doctest: +SKIP
    ...     options = dict(storage_options, aws_endpoint=proxy.endpoint)
    """

    def __init__(self, target: tuple[str, int], *, latency_s: float = 0.03, bandwidth: float | None = None) -> None:
        self.latency_s, self.bandwidth = latency_s, bandwidth
        self._records: list[ProxiedRequest] = []
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        super().__init__(target)

    @property
    def requests(self) -> list[ProxiedRequest]:
        with self._lock:
            return list(self._records)

    def mark(self) -> int:
        """Where the record stands now: ``requests[mark:]`` are the requests since."""
        with self._lock:
            return len(self._records)

    def __enter__(self) -> LatencyProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        super().close()
        with self._lock:
            for held in self._open:
                held.close()

    # --- relaying ------------------------------------------------------------------------------
    def on_connection(self, client: socket.socket) -> None:
        threading.Thread(target=self._serve, args=(client,), daemon=True, name="latency-proxy").start()

    def _serve(self, client: socket.socket) -> None:
        upstream = self.connect_to_target()
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._open.update((client, upstream))
        from_client, from_upstream = client.makefile("rb"), upstream.makefile("rb")
        try:
            while self._relay_one(from_client, upstream, from_upstream, client):
                pass
        except (OSError, ValueError):
            pass  # a side closed the connection
        finally:
            with self._lock:
                self._open.difference_update((client, upstream))
            client.close()
            upstream.close()

    def _relay_one(self, from_client, upstream: socket.socket, from_upstream, client: socket.socket) -> bool:
        """One request and its response; False when the connection is done."""
        head, headers = _read_head(from_client)
        if head is None:
            return False
        method, target = head.split(b" ")[:2]
        upstream.sendall(_join_head(head, headers))
        _copy_body(from_client, headers, upstream.sendall, has_body=True)
        response_head, response_headers = _read_head(from_upstream)
        if response_head is None:
            return False
        status = int(response_head.split(b" ")[1])
        record = ProxiedRequest(method.decode(), request_kind(method.decode(), target.decode()), status)
        with self._lock:
            self._records.append(record)
        time.sleep(self.latency_s)  # the store's time to first byte
        client.sendall(_join_head(response_head, response_headers))
        has_body = method != b"HEAD" and not (100 <= status < 200 or status in (204, 304))
        paced = _Pacer(client.sendall, self.bandwidth)

        def count(payload_bytes: int) -> None:
            record.body_bytes += payload_bytes

        _copy_body(from_upstream, response_headers, paced.send, has_body=has_body, until_close=True, count=count)
        closing = response_headers.get(b"connection", b"").lower() == b"close"
        delimited = not has_body or b"content-length" in response_headers or b"transfer-encoding" in response_headers
        return not closing and delimited


class _Pacer:
    """Sends through ``send`` no faster than ``bandwidth`` bytes/s: a chunk goes out once the
    bytes before it and itself fit in the time since the pacer was made (the first byte's time)."""

    def __init__(self, send, bandwidth: float | None) -> None:
        self._send, self._bandwidth = send, bandwidth
        self._start = time.perf_counter()
        self._sent = 0

    def send(self, data: bytes) -> None:
        self._sent += len(data)
        if self._bandwidth:
            wait = self._start + self._sent / self._bandwidth - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
        self._send(data)


def _read_head(stream) -> tuple[bytes | None, dict[bytes, bytes]]:
    """The start line and headers (lower-cased names; raw lines kept under their order)."""
    line = stream.readline(65537)
    while line in (b"\r\n", b"\n"):
        line = stream.readline(65537)
    if not line:
        return None, {}
    headers: dict[bytes, bytes] = {}
    raw: list[bytes] = []
    while (field := stream.readline(65537)) not in (b"\r\n", b"\n", b""):
        raw.append(field)
        name, _, value = field.partition(b":")
        headers[name.strip().lower()] = value.strip()
    headers[b"\0raw"] = b"".join(raw)
    return line.rstrip(b"\r\n"), headers


def _join_head(start: bytes, headers: dict[bytes, bytes]) -> bytes:
    return start + b"\r\n" + headers[b"\0raw"] + b"\r\n"


def _copy_body(
    stream, headers: dict[bytes, bytes], send, *, has_body: bool, until_close: bool = False, count=None
) -> None:
    """Relay one message body (Content-Length, chunked, or, for a response, up to the close),
    telling ``count`` each piece's payload bytes before sending it."""
    count = count or (lambda payload_bytes: None)
    if not has_body:
        return
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        while True:
            size_line = stream.readline(65537)
            size = int(size_line.split(b";")[0], 16)
            send(size_line)
            if size == 0:
                while (trailer := stream.readline(65537)) not in (b"\r\n", b"\n", b""):
                    send(trailer)
                send(b"\r\n")
                return
            chunk = stream.read(size + 2)  # the chunk and its CRLF
            count(size)
            send(chunk)
    if b"content-length" in headers:
        remaining = int(headers[b"content-length"])
    elif until_close:
        remaining = -1
    else:
        return  # a request without a length has no body
    while remaining != 0:
        data = stream.read1(CHUNK if remaining < 0 else min(CHUNK, remaining))
        if not data:
            if remaining > 0:
                raise ConnectionError("the message ended before its Content-Length")
            break
        count(len(data))
        send(data)
        remaining = remaining - len(data) if remaining > 0 else -1
