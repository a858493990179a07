"""``bitextforge serve``: a local web page over a finished run (or a scores file) on which filter
thresholds are moved and every row re-decided from the stored scores, without rescoring.

:mod:`.data` holds the run as columns and re-decides it with the runner's decision functions
(:mod:`.tables` reads its TSV tables and bins its histograms); :mod:`.decisions` shares the
decisions made among requests; :mod:`.save` writes the recipe the page saves; :mod:`.app` is the
Starlette application; :mod:`bitextforge.report.html` renders the static ``report.html``
snapshot of the same page from the same data. This module starts the server.
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import Iterable

from ..errors import BitextforgeError
from .hosts import is_loopback


def serve(target: str, scores: str | None = None, host: str = "127.0.0.1", port: int = 8765,
          save_dir: str | None = ".", open_browser: bool = False,
          allow_hosts: Iterable[str] = ()) -> None:
    """Load ``target`` (a run directory, or a recipe with ``scores`` or a finished output dir)
    and serve the page until interrupted; prints the URL once the socket is bound. Requests
    naming another host than ``host`` (its loopback forms, the machine's names when bound to
    0.0.0.0 or a name) or ``allow_hosts`` are refused."""
    try:
        import uvicorn

        from .app import create_app
    except ImportError as exc:
        from ..components.extras import install_hint

        raise BitextforgeError(f"bitextforge serve needs the 'serve' extra ({exc.name} not "
                               f"installed): {install_hint('bitextforge', 'serve')}") from None
    from .data import load_run, load_scores

    path = Path(target)
    if not path.exists():
        raise BitextforgeError(f"{target}: no such run directory or recipe file")
    if path.is_dir():
        if scores:
            raise BitextforgeError(f"{target}: --scores goes with a recipe, not a run directory")
        data = load_run(path)
    elif scores:
        data = load_scores(path, scores)
    else:
        from ..recipe.load import load_recipe

        recipe = load_recipe(path)
        if recipe.output is None:
            raise BitextforgeError(f"{target}: the recipe has no output.dir to show")
        data = load_run(recipe.output.dir)
    for w in data.warnings:
        print(f"bitextforge: warning: {w}", file=sys.stderr)
    if not is_loopback(host):
        print(f"bitextforge: warning: serving on {host}, not loopback: anyone who can reach this "
              f"machine can read the run", file=sys.stderr)
    save = Path(save_dir).resolve() if save_dir else None
    app = create_app(data, save, host=host, allow_hosts=allow_hosts)
    sock = listen(host, port)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    import threading

    def announce() -> None:
        import time

        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if server.started:
            sock = server.servers[0].sockets[0].getsockname()
            shown = f"[{sock[0]}]" if ":" in sock[0] else sock[0]
            print(f"bitextforge serve: {data.n} rows of {data.recipe.name} at "
                  f"http://{shown}:{sock[1]}/ (Ctrl-C stops)", flush=True)
            if save:
                print(f"recipes are saved in {save}", flush=True)
            if open_browser:
                import webbrowser

                webbrowser.open(f"http://{shown}:{sock[1]}/")

    threading.Thread(target=announce, daemon=True).start()
    server.run(sockets=[sock])


def listen(host: str, port: int):
    """A socket bound to ``host``:``port`` (0: a free port), before uvicorn starts: uvicorn
    reports a busy port with its own log line and exit status, not as one error with a hint."""
    import socket

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise BitextforgeError(f"serve: --host {host}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
    try:
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        hint = ("another program (perhaps another bitextforge serve) listens there; --port 0 "
                "picks a free port" if exc.errno == errno.EADDRINUSE else
                "--port 0 picks a free port; ports below 1024 need privileges"
                if exc.errno == errno.EACCES else "--port 0 picks a free port")
        raise BitextforgeError(f"serve: cannot listen on {host}:{port}: {exc.strerror}; "
                               f"{hint}") from None
    sock.set_inheritable(True)
    return sock
