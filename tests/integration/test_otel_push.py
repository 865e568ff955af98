"""``postrun otel push`` against a real HTTP receiver on loopback: what the SDK sends (decoded
from the protobuf the way a collector decodes it), where the endpoint and headers come from,
and the one line and exit 1 for a refused connection and for HTTP errors."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from postrun.otel.batches import MAX_BYTES, MAX_SPANS
from postrun.otel.mapping import span_id_of, trace_id_of
from postrun.otel.push import push_sessions
from postrun.otel.target import OtelError, OtelTarget, resolve_target
from tests.conftest import FIXTURES, run_postrun
from tests.support.claude_lines import Transcript
from tests.support.postgres import free_port

FAILED, HELPERS = "1795976512762_vrqks", "1795976749765_vx695"
_SESSIONS = [
    FIXTURES / "cline-real" / "b_run_commands" / "data" / "sessions" / FAILED,
    FIXTURES / "cline-real" / "h_subagents" / "data" / "sessions" / HELPERS,
]


@dataclass
class Receiver:
    """Answers each POST with the next of ``statuses`` (the last one repeats) and keeps it;
    with ``location``, sent as a redirect's would be."""

    statuses: list[int] = field(default_factory=lambda: [200])
    location: str | None = None
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def traces(self) -> list[ExportTraceServiceRequest]:
        decoded = []
        for _, _, body in self.requests:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            decoded.append(request)
        return decoded


@contextlib.contextmanager
def receiving(statuses: list[int] | None = None, location: str | None = None) -> Iterator[Receiver]:
    receiver = Receiver(statuses or [200], location=location)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status = receiver.statuses[min(len(receiver.requests), len(receiver.statuses)) - 1]
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            if receiver.location is not None:
                self.send_header("Location", receiver.location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="otlp-receiver")
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def store(env: dict[str, str]) -> Path:
    done = run_postrun("ingest", *map(str, _SESSIONS), env=env)
    assert done.returncode == 0, done.stderr
    return Path(env["POSTRUN_DB"])


@pytest.fixture
def otel_env(env: dict[str, str]) -> dict[str, str]:
    """The test environment without the developer's own OTEL_* variables, with a short timeout."""
    cleaned = {key: value for key, value in env.items() if not key.startswith("OTEL_")}
    cleaned["OTEL_EXPORTER_OTLP_TIMEOUT"] = "3"
    return cleaned


def test_each_session_is_one_request_with_its_own_ids(store: Path) -> None:
    with receiving() as receiver:
        pushed = push_sessions(store, OtelTarget(receiver.url, {"x-team": "qa"}), timeout=5)
    assert (pushed.sessions, pushed.spans) == (2, sum(len(_spans(r)) for r in receiver.traces()))
    assert [path for path, _, _ in receiver.requests] == ["/v1/traces", "/v1/traces"]
    assert all(headers["x-team"] == "qa" for _, headers, _ in receiver.requests)
    assert all(headers["content-type"] == "application/x-protobuf" for _, headers, _ in receiver.requests)
    by_trace = {}
    for request in receiver.traces():
        (resource,) = request.resource_spans
        assert {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"] == "postrun"
        spans = _spans(request)
        (trace_id,) = {span.trace_id for span in spans}
        by_trace[trace_id] = spans
    assert set(by_trace) == {trace_id_of(FAILED).to_bytes(16, "big"), trace_id_of(HELPERS).to_bytes(16, "big")}
    failed = by_trace[trace_id_of(FAILED).to_bytes(16, "big")]
    root = next(span for span in failed if not span.parent_span_id)
    assert root.name == "invoke_agent cline" and root.span_id == span_id_of(FAILED, "session", "").to_bytes(8, "big")
    errors = [span for span in failed if span.status.code == span.status.STATUS_CODE_ERROR]
    assert len(errors) == 3 and all(span.name == "execute_tool command" for span in errors)


def _spans(request: ExportTraceServiceRequest) -> list[object]:
    return [span for resource in request.resource_spans for scope in resource.scope_spans for span in scope.spans]


def test_the_endpoint_and_headers_come_from_flags_then_settings_then_the_sdk_variables() -> None:
    environ = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic%20abc,x-b=2",
    }
    from_env = resolve_target(endpoint=None, headers=(), setting_endpoint=None, setting_headers=None, environ=environ)
    assert from_env == OtelTarget("http://collector:4318/v1/traces", {"authorization": "Basic abc", "x-b": "2"})
    traces_env = {**environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t.example/otel/v1/traces"}
    assert (
        resolve_target(
            endpoint=None, headers=(), setting_endpoint=None, setting_headers=None, environ=traces_env
        ).endpoint
        == "https://t.example/otel/v1/traces"
    )
    from_setting = resolve_target(
        endpoint=None, headers=(), setting_endpoint="http://s:6006/v1/traces", setting_headers="k=v", environ=environ
    )
    assert from_setting == OtelTarget("http://s:6006/v1/traces", {"k": "v"})
    from_flags = resolve_target(
        endpoint="http://f:1/v1/traces", headers=("A=1", "b = 2"), setting_endpoint="http://s/", setting_headers="k=v",
        environ=environ,
    )  # fmt: skip
    assert from_flags == OtelTarget("http://f:1/v1/traces", {"A": "1", "b": "2"})
    with pytest.raises(OtelError, match=r"^--endpoint: expected an http"):
        resolve_target(endpoint="localhost:4318", headers=(), setting_endpoint=None, setting_headers=None, environ={})
    with pytest.raises(OtelError, match="OTEL_EXPORTER_OTLP_HEADERS: expected headers as key=value"):
        resolve_target(
            endpoint="http://f/", headers=(), setting_endpoint=None, setting_headers=None,
            environ={"OTEL_EXPORTER_OTLP_HEADERS": "justatoken"},
        )  # fmt: skip
    with pytest.raises(OtelError, match="no OTLP endpoint"):
        resolve_target(endpoint=None, headers=(), setting_endpoint=None, setting_headers=None, environ={})


def test_the_cli_pushes_to_the_variables_endpoint_with_their_headers(store: Path, otel_env: dict[str, str]) -> None:
    with receiving() as receiver:
        otel_env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{receiver.port}"
        otel_env["OTEL_EXPORTER_OTLP_HEADERS"] = "authorization=Bearer%20t0k"
        done = run_postrun("otel", "push", FAILED[:8], env=otel_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"otel {receiver.url}: pushed 1 session (")
    assert [headers["authorization"] for _, headers, _ in receiver.requests] == ["Bearer t0k"]


def test_the_otel_settings_and_their_errors(store: Path, otel_env: dict[str, str]) -> None:
    with receiving() as receiver:
        otel_env["POSTRUN_OTEL_ENDPOINT"] = receiver.url
        otel_env["POSTRUN_OTEL_HEADERS"] = "x-key=s3cret"
        done = run_postrun("otel", "push", env=otel_env)
        shown = run_postrun("config", "show", env=otel_env)
    assert done.returncode == 0, done.stderr
    assert "pushed 2 sessions" in done.stdout
    assert {headers["x-key"] for _, headers, _ in receiver.requests} == {"s3cret"}
    assert "s3cret" not in shown.stdout and "x-key=***" in shown.stdout
    otel_env["POSTRUN_OTEL_ENDPOINT"] = "tcp://nowhere"
    bad = run_postrun("otel", "push", env=otel_env)
    assert bad.returncode == 78, bad.stderr
    assert "POSTRUN_OTEL_ENDPOINT" in bad.stderr and "Traceback" not in bad.stderr


def test_a_refused_endpoint_is_quoted_without_its_credentials(store: Path, otel_env: dict[str, str]) -> None:
    flag = run_postrun("otel", "push", "--endpoint", "htp://ann:pw0rd1@h:4318/v1/traces?token=t0k3n", env=otel_env)
    assert (flag.returncode, flag.stderr) == (
        1,
        "error: --endpoint: expected an http:// or https:// URL with a host, got 'htp://***@h:4318/v1/traces'\n",
    )
    otel_env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://ann:pw0rd1@h:99999/v1/traces?token=t0k3n"
    variable = run_postrun("otel", "push", env=otel_env)
    assert (variable.returncode, variable.stderr) == (
        1,
        "error: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: not a URL: 'http://***@h:99999/v1/traces'\n",
    )
    otel_env["POSTRUN_OTEL_ENDPOINT"] = "ftp://ann:pw0rd1@h/v1/traces?token=t0k3n"
    setting = run_postrun("otel", "push", env=otel_env)
    assert setting.returncode == 78 and setting.stderr.count("\n") == 1
    assert "ftp://***@h/v1/traces" in setting.stderr
    for done in (flag, variable, setting):
        assert "pw0rd1" not in done.stderr and "t0k3n" not in done.stderr


def test_a_refused_connection_is_one_line_and_exit_1(store: Path, otel_env: dict[str, str]) -> None:
    port = free_port()
    done = run_postrun("otel", "push", "--endpoint", f"http://127.0.0.1:{port}/v1/traces", env=otel_env)
    assert done.returncode == 1
    url = f"http://127.0.0.1:{port}/v1/traces"
    assert done.stderr == f"error: otel {url}: connection refused (session {FAILED}; 0 of 2 sessions pushed)\n"


@pytest.mark.parametrize(("status", "said"), [(401, "HTTP 401 Unauthorized"), (500, "HTTP 500 Internal Server Error")])
def test_an_http_error_is_one_line_and_exit_1(store: Path, otel_env: dict[str, str], status: int, said: str) -> None:
    with receiving([status]) as receiver:
        done = run_postrun("otel", "push", "--endpoint", receiver.url, "--header", "Authorization=x", env=otel_env)
    assert done.returncode == 1
    assert done.stderr == f"error: otel {receiver.url}: {said} (session {FAILED}; 0 of 2 sessions pushed)\n"


@contextlib.contextmanager
def trickling() -> Iterator[str]:
    """A receiver that reads the request, then answers one byte every 0.2 s for as long as the
    client waits: each read gets a byte well within any per-read timeout, the answer never ends."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)

    def answer(connection: socket.socket) -> None:
        with connection:
            connection.settimeout(0.5)
            with contextlib.suppress(TimeoutError):
                while connection.recv(65536):
                    pass  # the whole request (the client then waits for the answer)
            head = b"HTTP/1.1 200 OK\r\nX-Pad: "
            sent = 0
            while not stop.is_set():
                try:
                    connection.sendall(head[sent : sent + 1] if sent < len(head) else b"a")
                except OSError:
                    return  # the client gave up
                sent += 1
                stop.wait(0.2)

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                connection, _ = listener.accept()
                threading.Thread(target=answer, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=accept, name="otlp-trickler")
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1/traces"
    finally:
        stop.set()
        thread.join(10)
        listener.close()


def test_a_receiver_that_trickles_its_answer_times_out(store: Path, otel_env: dict[str, str]) -> None:
    # requests' timeout bounds each read, so a byte every 0.2 s kept the push waiting for good.
    otel_env["OTEL_EXPORTER_OTLP_TIMEOUT"] = "1"
    with trickling() as url:
        started = time.monotonic()
        done = run_postrun("otel", "push", "--endpoint", url, env=otel_env, timeout=30)
        took = time.monotonic() - started
    assert done.returncode == 1
    said = f"timed out: no answer within 1 s (session {FAILED}; 0 of 2 sessions pushed)"
    assert done.stderr == f"error: otel {url}: {said}\n"
    assert took < 10


def test_a_redirect_is_not_taken_for_the_spans_arriving(store: Path, otel_env: dict[str, str]) -> None:
    # The SDK follows no redirect and counts any 3xx a success: an http:// endpoint a proxy
    # sends on to https:// was "pushed" while nothing arrived anywhere.
    with receiving([308], location="https://ann:pw0rd1@otel.example/v1/traces?token=t0k3n") as receiver:
        done = run_postrun("otel", "push", "--endpoint", receiver.url, env=otel_env)
    assert done.returncode == 1, done.stdout
    said = "HTTP 308 Permanent Redirect to https://***@otel.example/v1/traces (the endpoint must be the receiver's own)"
    assert done.stderr == f"error: otel {receiver.url}: {said} (session {FAILED}; 0 of 2 sessions pushed)\n"
    assert len(receiver.requests) == 1


def test_a_failure_after_the_first_session_says_how_far_it_got(store: Path, otel_env: dict[str, str]) -> None:
    with receiving([200, 400]) as receiver:
        done = run_postrun("otel", "push", "--endpoint", receiver.url, env=otel_env)
    assert done.returncode == 1
    assert (
        done.stderr == f"error: otel {receiver.url}: HTTP 400 Bad Request (session {HELPERS}; 1 of 2 sessions pushed)\n"
    )
    assert len(receiver.requests) == 2


def test_nothing_to_push_and_unknown_sessions(env: dict[str, str], otel_env: dict[str, str]) -> None:
    with receiving() as receiver:
        empty = run_postrun("otel", "push", "--endpoint", receiver.url, env=otel_env)
        unknown = run_postrun("otel", "push", "nosuch", "--endpoint", receiver.url, env=otel_env)
    assert empty.returncode == 0 and "pushed 0 sessions" in empty.stdout
    assert unknown.returncode == 1 and unknown.stderr.startswith("error: no session nosuch in ")
    assert receiver.requests == []


def test_a_huge_session_goes_in_requests_a_receiver_takes(env: dict[str, str], otel_env: dict[str, str]) -> None:
    # 700 commands of 16 KB output: with --content about 11 MB and 700+ spans, more than one
    # request should hold (the Collector refuses bodies over 20 MiB; the SDK batches by 512).
    transcript = Transcript("c0ffee00-0000-4000-8000-00000000b16b", "/home/dev/work/big")
    transcript.enqueue("run them all")
    transcript.prompt("run them all")
    transcript.metadata(prompt="run them all")
    for index in range(700):
        output = f"{index:05d} " + "x" * 16_000
        transcript.call(f"msg_{index}", f"toolu_{index}", "Bash", {"command": f"cat part{index}", "description": "r"})
        bash = {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
        transcript.result(f"toolu_{index}", output, is_error=False, tool_use_result=bash)
    transcript.text("msg_end", "done")
    path = transcript.write(Path(env["HOME"]) / "big" / f"{transcript.session_id}.jsonl")
    assert run_postrun("ingest", "--agent", "claude-code", str(path), env=env).returncode == 0
    with receiving() as receiver:
        done = run_postrun("otel", "push", "--content", "--endpoint", receiver.url, env=otel_env)
    assert done.returncode == 0, done.stderr
    assert len(receiver.requests) >= 3
    assert all(len(body) <= MAX_BYTES for _, _, body in receiver.requests)
    spans = [span for request in receiver.traces() for span in _spans(request)]
    assert all(len(_spans(request)) <= MAX_SPANS for request in receiver.traces())
    assert len({span.span_id for span in spans}) == len(spans) == _pushed_spans(done.stdout) > 700
    assert {span.trace_id for span in spans} == {trace_id_of(transcript.session_id).to_bytes(16, "big")}
    outputs = [span for span in spans if any(a.key == "gen_ai.tool.call.result" for a in span.attributes)]
    assert len(outputs) == 700


def _pushed_spans(stdout: str) -> int:
    # "otel <url>: pushed 1 session (702 spans)"
    return int(stdout.rsplit("(", 1)[1].split()[0].replace(",", ""))
