"""Fixtures of the dataset tests."""

import functools
import http.server
import threading

import pytest


@pytest.fixture
def server(tmp_path):
    """A small http.server on 127.0.0.1 serving tmp_path/serve in a thread."""
    root = tmp_path / "serve"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
