"""A streamable-HTTP MCP server on Python's standard library only, for the
gateway's benchmark matrix (BenchmarkMatrix): one echo tool, answers to
requests written as an event stream in chunked encoding, the stream's end
written on its own as the Python SDKs do. It prints "LISTEN <url>" and
serves until its stdin closes.
"""

import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOL = {
    "name": "items_echo",
    "description": "Echo the arguments.",
    "inputSchema": {"type": "object", "properties": {"msg": {"type": "string"}}},
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The head, the event and the stream's end are separate writes: with
    # Nagle's algorithm on, each answer would wait for a delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            msg = json.loads(body)
        except ValueError:
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "id" not in msg:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        method = msg.get("method")
        params = msg.get("params") or {}
        session = None
        if method == "initialize":
            session = uuid.uuid4().hex
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "items", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            text = json.dumps(params.get("arguments") or {}, separators=(",", ":"))
            result = {"content": [{"type": "text", "text": text}]}
        elif method == "ping":
            result = {}
        else:
            self.answer(session, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found"}})
            return
        self.answer(session, {"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def answer(self, session, response):
        event = ("event: message\ndata: " + json.dumps(response, separators=(",", ":")) + "\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        if session:
            self.send_header("Mcp-Session-Id", session)
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class Server(ThreadingHTTPServer):
    request_queue_size = 128  # 32 clients connecting at once
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that went away; nothing to report


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    print("LISTEN http://127.0.0.1:%d/mcp" % srv.server_address[1], flush=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    sys.stdin.read()
    srv.shutdown()


if __name__ == "__main__":
    main()
