"""`harvest http FILE`: serve the management HTTP API of a served store with uvicorn.

It binds to 127.0.0.1 unless told otherwise, and refuses a host other than
loopback without a token: the API starts, signals and ends runs, so it is
never open to a network by accident.
"""

from __future__ import annotations

import contextlib
import ipaddress
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harvest_engine.cli.app import FILE, Target, codec, main
from harvest_engine.cli.output import HarvestFailure, failures

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

    import uvicorn
    from starlette.types import ASGIApp, Receive, Scope, Send

    from harvest_engine.codecs import PayloadCodec

EXIT_USAGE = 2


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine only: ``localhost`` or a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name may resolve anywhere: it needs a token


def read_token(path: Path) -> str:
    """The token a file holds (surrounding white space dropped); a failure for a blank one."""
    try:
        token = path.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise HarvestFailure(f"{path}: cannot read the token file ({exc})") from exc
    if not token or any(c.isspace() for c in token):
        raise HarvestFailure(f"{path}: the token file holds no token (one word)")
    return token


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port), listening.

    Made here rather than by uvicorn so the printed URL names the real port
    (``--port 0`` picks a free one), and with IPPROTO_TCP so asyncio sets
    TCP_NODELAY on its connections (without it a kept-alive connection waits
    for a delayed ACK, 40 ms a response).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(128)
        except BaseException:
            sock.close()
            raise
    except OSError as exc:
        raise HarvestFailure(f"cannot listen on {host}:{port}: {exc}") from exc
    return sock


def host_name(header: str) -> str:
    """The host of a Host header, without its port (``[::1]:80`` -> ``::1``)."""
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


def _app(
    file: Target,
    token: str | None,
    read_only: bool,
    payload_codec: PayloadCodec | None = None,
) -> ASGIApp:
    try:
        import uvicorn  # noqa: F401, PLC0415 - the http extra
        from starlette.datastructures import Headers  # noqa: PLC0415

        from harvest_engine.http import create_app  # noqa: PLC0415
        from harvest_engine.http.app import error_response  # noqa: PLC0415
        from harvest_engine.http.errors import HttpRefusal  # noqa: PLC0415
    except ImportError as exc:
        raise HarvestFailure(
            f"harvest http needs the http extra ({exc.name} is missing): "
            "pip install 'harvest[http]'"
        ) from exc
    with failures():
        app = create_app(file, token=token, read_only=read_only, codec=payload_codec)
    if token is not None:
        return app

    async def loopback_names_only(scope: Scope, receive: Receive, send: Send) -> None:
        """Without a token, only a request naming this machine in Host gets through.

        A web page can point a name it controls at 127.0.0.1 (DNS rebinding)
        and then read and call the API as its own site; its requests carry
        that name in Host, so they are refused here (403).
        """
        if scope["type"] == "http":
            header = Headers(scope=scope).get("host", "")
            if not is_loopback(host_name(header)):
                refusal = HttpRefusal(
                    403,
                    "UntrustedHost",
                    f"Host {header!r} is not this machine: without a token the "
                    "API answers only requests to 127.0.0.1, localhost or ::1",
                )
                await error_response(refusal)(scope, receive, send)
                return
        await app(scope, receive, send)

    return loopback_names_only


@main.command("http")
@FILE
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on."
)
@click.option(
    "--port",
    type=int,
    default=8765,
    show_default=True,
    help="Port (0 picks a free one).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A file holding the bearer token every request must send (required off loopback).",
)
@click.option(
    "--read-only", is_flag=True, help="Refuse every route that changes the store (403)."
)
def http(
    file: Target, host: str, port: int, token_file: Path | None, read_only: bool
) -> None:
    """Serve the management HTTP API of FILE (a served file or a Postgres URL).

    Routes are under /api/v1 (the OpenAPI document: /api/v1/openapi.json).
    Commands go to the process that serves FILE, as `harvest start`'s do;
    reads come from FILE, decoded with --codec when its payloads are encoded.
    SIGINT or SIGTERM stops it.
    """
    token = None if token_file is None else read_token(token_file)
    if token is None and not is_loopback(host):
        raise HarvestFailure(
            f"refusing to listen on {host} without a token: anyone who reaches it "
            "could start and end runs; give --token-file, or keep the default "
            "--host 127.0.0.1",
            EXIT_USAGE,
        )
    app = _app(file, token, read_only, codec())
    import uvicorn  # noqa: PLC0415 - the http extra (create_app said so if missing)

    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    click.echo(
        f"serving http://{shown}:{bound}/api/v1 for {file}"
        f"{' (read-only)' if read_only else ''}; Ctrl+C stops",
    )
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, ws="none", lifespan="on"
    )
    try:
        _server(config).run(sockets=[sock])
    finally:
        sock.close()


def _server(config: uvicorn.Config) -> uvicorn.Server:
    """A uvicorn server that a SIGINT or SIGTERM stops gracefully, ending with status 0.

    uvicorn re-raises the signal once it has shut down, so the process would
    end killed by it; `harvest http` ends as the README's worker does, and
    as every other `harvest` command that finished its job.
    """
    import uvicorn  # noqa: PLC0415 - the http extra

    class QuietStop(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            previous = {
                sig: signal.signal(sig, self._stop)
                for sig in (signal.SIGINT, signal.SIGTERM)
            }
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

        def _stop(self, sig: int, frame: FrameType | None) -> None:
            del sig, frame
            self.force_exit = self.should_exit  # a second signal cuts it short
            self.should_exit = True

    return QuietStop(config)
