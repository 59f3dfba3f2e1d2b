"""A local HTTP server on 127.0.0.1 that serves the bilm-tf fixture model
as a pretrained preset, for tests of the download path (and of examples
that call `keras_elmo.load_bilm("original")`) without leaving the machine.

    with serve_fixture_as(monkeypatch, tmp_path, "original"):
        bilm = keras_elmo.load_bilm("original")  # the fixture model
"""

import contextlib
import hashlib
import http.server
import socket
import threading

from elmo_core import pretrained
from elmo_core.pretrained import Preset
from elmo_core.pretrained import PresetFile
from elmo_core.pretrained import downloader
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


FILES = {
    "/m/options.json": read_bytes(OPTIONS),
    "/m/weights.hdf5": read_bytes(WEIGHTS),
}


HTML_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head>"
    b"<body>Please sign in to the network.</body></html>\n"
)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


class ModelServer:
    """A local HTTP server for `files` (default FILES: `{path: bytes}`)
    with `Range` support and faults.

    `damage[path]`: how many next answers carry damaged bytes (same size);
    `drop[path]`: how many next answers stop after `drop_bytes` bytes;
    `transient[path]`: a list of `(status, headers)` answered first, one
    per request (e.g. `(503, {"Retry-After": "7"})`);
    `reset[path]`: how many next requests get the connection closed
    without an answer;
    `html[path]`: how many next answers are an HTML page (a portal's);
    `ignore_range`: answer every request with the whole file (200).

    Each answer carries an ETag (of the file's bytes), and a `Range`
    request whose `If-Range` is another ETag gets the whole file, as HTTP
    says; `ignore_if_range`: continue from the offset asked anyway (a
    server that does not check), `etags`: False sends none.
    """

    def __init__(self, files=None):
        self.files = FILES if files is None else files
        self.requests = []
        self.damage = {}
        self.drop = {}
        self.transient = {}
        self.reset = {}
        self.html = {}
        self.drop_bytes = 100_000
        self.ignore_range = False
        self.ignore_if_range = False
        self.etags = True
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append((self.path, self.headers.get("Range")))
                if server.reset.get(self.path):
                    server.reset[self.path] -= 1
                    self.close_connection = True
                    return
                if server.transient.get(self.path):
                    status, headers = server.transient[self.path].pop(0)
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path not in server.files:
                    self.send_error(404)
                    return
                data = server.files[self.path]
                etag = f'"{sha256(data)[:16]}"'
                if server.html.get(self.path):
                    server.html[self.path] -= 1
                    data = HTML_PAGE
                if server.damage.get(self.path):
                    server.damage[self.path] -= 1
                    # Zero 64 bytes at the start (the HDF5 signature) and
                    # in the middle: same size, other content.
                    data = bytearray(data)
                    data[:64] = bytes(64)
                    middle = len(data) // 2
                    data[middle : middle + 64] = bytes(64)
                    data = bytes(data)
                start = 0
                requested = self.headers.get("Range")
                condition = self.headers.get("If-Range")
                if condition and condition != etag:
                    if not server.ignore_if_range:
                        requested = None  # changed: the whole file
                if requested and not server.ignore_range:
                    start = int(requested.split("=")[1].split("-")[0])
                    if start >= len(data):
                        self.send_error(416)
                        return
                    self.send_response(206)
                    self.send_header(
                        "Content-Range",
                        f"bytes {start}-{len(data) - 1}/{len(data)}",
                    )
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                if server.etags:
                    self.send_header("ETag", etag)
                self.end_headers()
                body = data[start:]
                if server.drop.get(self.path):
                    server.drop[self.path] -= 1
                    # Announce the whole length, send a part, close.
                    body = body[: server.drop_bytes]
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # Polled every 20 ms: `stop` waits for the next poll (half a
        # second at the default, at every one of the suite's servers).
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}
        )
        self.thread.start()

    def stop(self):
        if self.thread is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join()
            self.thread = None

    def count(self, path):
        return sum(1 for p, _ in self.requests if p == path)


def fixture_preset(name, base, hashed=True):
    def record(path):
        data = FILES[path]
        if not hashed:
            return PresetFile(base + path)
        return PresetFile(base + path, size=len(data), sha256=sha256(data))

    return Preset(
        name=name,
        kind="bilm-tf",
        language="en",
        description="the bilm-tf fixture model",
        files={
            "options": record("/m/options.json"),
            "weights": record("/m/weights.hdf5"),
        },
    )


def refuse_other_hosts(monkeypatch):
    """Makes any connection to a host other than 127.0.0.1 fail."""
    connect = socket.create_connection

    def guarded(address, *args, **kwargs):
        if address[0] not in ("127.0.0.1", "localhost"):
            raise AssertionError(f"test tried to reach {address}")
        return connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", guarded)


@contextlib.contextmanager
def serve_fixture_as(monkeypatch, cache_dir, *names):
    """Serves the fixture model under the preset `names` (replacing those
    entries of `PRESETS`), with an empty cache in `cache_dir`; yields the
    `ModelServer`."""
    refuse_other_hosts(monkeypatch)
    monkeypatch.setenv(pretrained.CACHE_VARIABLE, str(cache_dir))
    monkeypatch.delenv(pretrained.MIRROR_VARIABLE, raising=False)
    monkeypatch.setattr(downloader, "RETRY_PAUSE_SECONDS", 0.0)
    server = ModelServer()
    try:
        for name in names:
            preset = fixture_preset(name, server.url)
            monkeypatch.setitem(pretrained.PRESETS, name, preset)
        yield server
    finally:
        server.stop()
