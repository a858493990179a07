"""The web application of ``bitextforge serve``: one page over a finished run and a small JSON API.

Starlette routes, served by uvicorn. The endpoints are module-level functions; what they share (the
run, the save directory, the table of decisions) lives on ``app.state``, set by :func:`create_app`.
The API only reads the run held in memory (:class:`bitextforge.serve.data.RunData`); decisions and
everything else that reads the run's arrays run in worker threads, not on the event loop, so one
slow request does not hold up the others, and identical bounds are decided once
(:class:`bitextforge.serve.decisions.Decisions`). The one write is ``POST /api/export``, which
saves a recipe under a bare file name inside the save directory given at start, never over a file
serve did not write. Every bad request (bounds that are not finite numbers or contradict each
other, unknown or duplicate keys, JSON nested deeper than :data:`MAX_DEPTH` or a body over
:data:`MAX_BODY`, a page size over :data:`MAX_LIMIT`, a file name with a path in it) gets a 4xx
answer with a one-line JSON error and no traceback.

A page on another site must neither write nor read through the user's browser:
:class:`RequestGuard` answers 403 to a ``Host`` that is not an address of this server (DNS
rebinding) and to a foreign ``Origin``, and 415 to a write whose body is not declared
``application/json`` (which a plain HTML form cannot send, and which a script of another origin
cannot send without a preflight this server never grants).
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import socket
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import BitextforgeError
from ..recipe.load import KeepSpec
from .hosts import is_loopback
from .data import AXES, RunData
from .decisions import Decisions
from .save import SaveRefused, save_recipe

MAX_LIMIT = 200
#: a saved recipe's file name, matched whole (``$`` would let a name end in a newline)
SAVE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}\.ya?ml")
STATIC = ("page.js", "page.css")
#: the largest request body (a saved recipe's name and bounds take a few hundred bytes)
MAX_BODY = 64 * 1024
#: the deepest JSON nesting accepted; the API's deepest is 3 (body -> keep -> step -> bound)
MAX_DEPTH = 8
#: the keys of a step's bounds, as :class:`bitextforge.recipe.load.KeepSpec` names them
KEEP_KEYS = ("min", "max", "top", "words", "words_side", "order")
_STEP_KEY = re.compile(r"0|[1-9][0-9]{0,3}")
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?")


def plotly_js() -> Path:
    """plotly.js as the ``plotly`` wheel ships it (no CDN: the page works offline)."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _bad(msg: str, status: int = 400) -> HTTPException:
    return HTTPException(status_code=status, detail=msg)


def _depth(raw: str) -> int:
    """How deeply arrays and objects nest in JSON text (brackets inside strings do not count)."""
    depth = deepest = 0
    for ch in re.findall(r"[][{}]", _JSON_STRING.sub('""', raw)):
        depth += 1 if ch in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def strict_json(raw: str, what: str) -> Any:
    """JSON as the API takes it: finite numbers only (``NaN``, ``Infinity`` and ``1e999999``,
    which Python's parser turns into non-finite floats, are refused), no key twice in one object,
    and at most :data:`MAX_DEPTH` levels; anything else is a 400 naming ``what``."""
    def constant(name: str) -> Any:
        raise _bad(f"{what}: {name} is not a finite number")

    def number(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise _bad(f"{what}: {text[:20]} is not a finite number")
        return value

    def integer(text: str) -> int:
        try:
            value = int(text)  # over 4,300 digits: ValueError
            float(value)
        except (ValueError, OverflowError):
            raise _bad(f"{what}: {text[:20]}... is not a finite number") from None
        return value

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # json.loads keeps the last of two equal keys; the recipe loader refuses them, and so
        # does the API, so that the bounds saved are never other than the bounds sent
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise _bad(f"{what}: duplicate key {key[:40]!r}")
            out[key] = value
        return out

    if _depth(raw) > MAX_DEPTH:
        raise _bad(f"{what}: nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(raw, parse_constant=constant, parse_float=number, parse_int=integer,
                          object_pairs_hook=unique)
    except (ValueError, RecursionError):
        raise _bad(f"{what}: not JSON") from None


def parse_keep(raw: str | None, data: RunData) -> dict[int, KeepSpec]:
    """``keep`` query parameter: JSON ``{"step index": {"min": .., "max": .., "top": ..}}``."""
    if not raw:
        return {}
    if len(raw) > 10_000:
        raise _bad("keep: too long")
    return keeps_from(strict_json(raw, "keep"), data)


def keeps_from(obj: Any, data: RunData) -> dict[int, KeepSpec]:
    """Bounds per step from parsed JSON: every key a filter step's index whose bounds can change,
    every bound a known key with a number (``words_side``, ``order``: a string) or null."""
    if not isinstance(obj, dict):
        raise _bad("keep: expected an object of step index -> bounds")
    out: dict[int, KeepSpec] = {}
    for key, value in obj.items():
        if not _STEP_KEY.fullmatch(key):
            raise _bad(f"keep: {key[:40]!r} is not a step index")
        index = int(key)
        if not 0 <= index < len(data.steps) or not data.steps[index].decides \
                or not data.steps[index].editable:
            raise _bad(f"keep: steps[{index}] is not a filter step whose bounds can change")
        if not isinstance(value, dict):
            raise _bad(f"keep: steps[{index}]: expected an object")
        for k, v in value.items():
            if k not in KEEP_KEYS:
                raise _bad(f"keep: steps[{index}]: unknown key {k[:40]!r} (expected "
                           f"{', '.join(KEEP_KEYS)})")
            kind = str if k in ("words_side", "order") else (int, float)
            if v is not None and (isinstance(v, bool) or not isinstance(v, kind)):
                raise _bad(f"keep: steps[{index}].{k}: not "
                           f"{'a string' if kind is str else 'a number'}")
        try:
            out[index] = KeepSpec(**value)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err.get("loc", ()))
            raise _bad(f"keep: steps[{index}]{'.' + where if where else ''}: "
                       f"{err['msg']}") from None
        except TypeError as exc:
            raise _bad(f"keep: steps[{index}]: {exc}") from None
    return out


def _int(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _bad(f"{name}: not an integer") from None
    if not lo <= value <= hi:
        raise _bad(f"{name}: must be between {lo} and {hi}")
    return value


def _host_name(name: str) -> str:
    """A host name or address as compared: lower case, no brackets or final dot, an address in
    its canonical form (an IPv4 address mapped into IPv6 as the IPv4 one)."""
    name = name.strip("[]").rstrip(".").lower()
    ip = _ip(name)
    return str(ip) if ip is not None else name


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None
    return getattr(ip, "ipv4_mapped", None) or ip


class RequestGuard:
    """Which requests the server answers at all: a ``Host`` (and an ``Origin``, when a browser
    sends one) naming this server on the port it listens on, and writes declared
    ``application/json``.

    Answered names: loopback (``localhost``, ``127.0.0.1``, ``[::1]``), the address of the socket
    the request came in on, the ``host`` it is bound to, and, when that is ``0.0.0.0``/``::`` or a
    name, the machine's own names; plus ``allow_hosts``. A DNS-rebinding page arrives with its
    own name in ``Host``; a page of another origin (another site, or another port of this
    machine) names itself in ``Origin``."""

    def __init__(self, host: str = "127.0.0.1", allow_hosts: Iterable[str] = ()):
        """Answer for a server bound to ``host``, also under the names in ``allow_hosts`` (host
        names or addresses, no port: one with a port or a scheme could never match, and is
        refused with a :class:`~bitextforge.BitextforgeError` naming ``--allow-host``)."""
        for h in allow_hosts:
            if _ip(h) is None and not re.fullmatch(r"[A-Za-z0-9._-]+", h):
                raise BitextforgeError(f"serve: --allow-host {h!r}: give a host name or address "
                                       f"without scheme or port (serve.example, 10.0.0.5, "
                                       f"[fd00::5])")
        bound = _host_name(host)
        names = {bound, *(_host_name(h) for h in allow_hosts)}
        if bound in ("", "0.0.0.0", "::") or _ip(bound) is None:
            names |= {_host_name(socket.gethostname()), _host_name(socket.getfqdn())}
        self.names = frozenset(n for n in names if n not in ("", "0.0.0.0", "::"))

    def allows(self, authority: str, default_port: int, server: Any) -> bool:
        """Whether ``name[:port]`` (a Host value, an Origin's authority) is this server;
        ``server`` is the ASGI scope's (local address, port) of the connection."""
        m = _HOST.fullmatch(authority)
        if not m:
            return False
        name = _host_name(m.group(1))
        port = int(m.group(2)) if m.group(2) else default_port
        if server and port != server[1]:
            return False
        if is_loopback(name) or name in self.names:
            return True
        # an address (no DNS involved, so no rebinding) the connection came in on
        return server is not None and _ip(name) is not None and _ip(str(server[0])) == _ip(name)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """``(status, message)`` when the request must not be answered, else None."""
        headers: dict[str, list[str]] = {}
        for k, v in scope.get("headers", ()):
            headers.setdefault(k.decode("latin-1").lower(), []).append(v.decode("latin-1"))
        server = scope.get("server")
        host = headers.get("host", [])
        default_port = 443 if scope.get("scheme") == "https" else 80
        if len(host) != 1 or not self.allows(host[0].strip(), default_port, server):
            shown = repr(host[0][:80]) if host else "(none)"
            return 403, (f"Host {shown} is not an address of this server: refused (a page "
                         f"of another site may not reach it through DNS rebinding)")
        origin = headers.get("origin", [])
        if origin:
            scheme, sep, authority = origin[0].strip().partition("://")
            if len(origin) != 1 or not sep or scheme.lower() not in ("http", "https") or \
                    not self.allows(authority, 443 if scheme.lower() == "https" else 80, server):
                return 403, (f"Origin {origin[0][:80]!r} is not this page: cross-origin requests "
                             f"are refused")
        if scope.get("method") not in ("GET", "HEAD"):
            media = headers.get("content-type", [""])[0].split(";")[0].strip().lower()
            if media != "application/json":
                return 415, "Content-Type: a write must send application/json"
        return None


class _Guarded:
    """ASGI middleware: requests :meth:`RequestGuard.refusal` refuses get its status and a JSON
    error before any route sees them."""

    def __init__(self, app: ASGIApp, guard: RequestGuard):
        self.app, self.guard = app, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = self.guard.refusal(scope) if scope["type"] == "http" else None
        if refused:
            await JSONResponse({"error": refused[1]}, status_code=refused[0])(scope, receive, send)
        else:
            await self.app(scope, receive, send)


async def _body(request: Request) -> str:
    """The request body as text, refused (413) past :data:`MAX_BODY` bytes without reading on."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise _bad(f"body: more than {MAX_BODY:,} bytes", 413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise _bad(f"body: more than {MAX_BODY:,} bytes", 413)
        chunks.append(chunk)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise _bad("body: not UTF-8") from None


def _state(request: Request) -> Any:
    """What the endpoints share, kept on the application (see :func:`create_app`)."""
    return request.app.state


def _decision(request: Request):
    """The decision (an :class:`~bitextforge.serve.decisions.Entry`) for the request's ``keep``
    bounds; blocking: endpoints call it in a worker thread."""
    state = _state(request)
    return state.decisions.get(parse_keep(request.query_params.get("keep"), state.data))


def _step_index(request: Request) -> int:
    return _int(request, "step", 0, 0, max(0, len(_state(request).data.steps) - 1))


def _axis(request: Request) -> str:
    axis = request.query_params.get("axis", "score")
    if axis not in AXES:
        raise _bad(f"axis: {axis[:20]!r} is not one of {', '.join(AXES)}")
    return axis


async def index(request: Request) -> Response:
    """The page."""
    page = resources.files("bitextforge.serve").joinpath("static", "page.html").read_text(
        encoding="utf-8")
    return HTMLResponse(page)


async def static(request: Request) -> Response:
    """The page's script and stylesheet, and plotly.js, from a fixed list."""
    name = request.path_params["name"]
    if name == "plotly.min.js":
        return FileResponse(plotly_js(), media_type="text/javascript")
    if name not in STATIC:
        raise _bad("not found", 404)
    path = resources.files("bitextforge.serve").joinpath("static", name)
    media = "text/javascript" if name.endswith(".js") else "text/css"
    return Response(path.read_text(encoding="utf-8"), media_type=media)


async def favicon(request: Request) -> Response:
    """No icon (browsers ask for one)."""
    return Response(status_code=204)


async def overview(request: Request) -> Response:
    """``GET /api/run``: the run, its recipe and steps, once per page."""
    return JSONResponse(await run_in_threadpool(_state(request).data.overview))


async def decide(request: Request) -> Response:
    """``GET /api/decide?keep=...&axis=score|logit``: counts and histograms under the bounds."""
    axis = _axis(request)

    def work() -> bytes:
        return _decision(request).summary(_state(request).data, axis)

    # the answer's JSON text is made once per bounds and axis, and sent as it is
    return Response(await run_in_threadpool(work), media_type="application/json")


async def rows(request: Request) -> Response:
    """``GET /api/rows``: a page of one filter step's kept or rejected rows, nearest the bound."""
    side = request.query_params.get("side", "rejected")
    query = request.query_params.get("q", "")[:200]
    index, offset = _step_index(request), _int(request, "offset", 0, 0, 10**9)
    limit = _int(request, "limit", 20, 1, MAX_LIMIT)

    def work() -> Any:
        return _state(request).data.rows(_decision(request).decision, index, side, query,
                                         offset, limit)

    return JSONResponse(await run_in_threadpool(work))


async def groups(request: Request) -> Response:
    """``GET /api/groups``: originals beside the rows a paraphrase step made."""
    query = request.query_params.get("q", "")[:200]
    index, offset = _step_index(request), _int(request, "offset", 0, 0, 10**9)
    limit = _int(request, "limit", 10, 1, MAX_LIMIT)

    def work() -> Any:
        return _state(request).data.groups(_decision(request).decision, index, query, offset,
                                           limit)

    return JSONResponse(await run_in_threadpool(work))


async def changes(request: Request) -> Response:
    """``GET /api/changes``: a page of the texts a clean step changed."""
    index, offset = _step_index(request), _int(request, "offset", 0, 0, 10**9)
    limit = _int(request, "limit", 10, 1, MAX_LIMIT)
    return JSONResponse(await run_in_threadpool(_state(request).data.changes, index, offset,
                                                limit))


async def export(request: Request) -> Response:
    """``POST /api/export``: save the recipe with the page's bounds under a bare name inside the
    save directory; a name taken by a file serve did not write is refused (409)."""
    state = _state(request)
    save_dir, data = state.save_dir, state.data
    if save_dir is None:
        raise _bad("saving is off (start bitextforge serve with --save-dir)", 403)
    body = strict_json(await _body(request), "body")
    if not isinstance(body, dict):
        raise _bad("body: expected an object with name and keep")
    unknown = sorted(set(body) - {"name", "keep"})
    if unknown:
        raise _bad(f"body: unknown key {unknown[0][:40]!r} (expected name, keep)")
    name = body.get("name")
    if not isinstance(name, str) or not SAVE_NAME.fullmatch(name) or ".." in name:
        raise _bad("name: a file name ending in .yaml, without a directory "
                   "(letters, digits, . _ -; no '..')")
    keep = body.get("keep") or {}
    keeps = parse_keep(keep, data) if isinstance(keep, str) else keeps_from(keep, data)
    target = (save_dir / name).resolve()
    if target.parent != save_dir.resolve():
        raise _bad("name: outside the save directory")

    def work() -> tuple[Path, int]:
        try:
            path = save_recipe(data, keeps, target)
        except SaveRefused as exc:
            raise _bad(str(exc), 409) from None
        return path, state.decisions.get(keeps).decision.kept

    path, kept = await run_in_threadpool(work)
    return JSONResponse({"path": str(path), "kept": kept, "command": f"bitextforge run {path}"})


async def on_http_error(request: Request, exc: HTTPException) -> Response:
    """A refused request: its status and one line of JSON."""
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code)


async def on_user_error(request: Request, exc: BitextforgeError) -> Response:
    """A request the run cannot answer (a wrong step, a missing cleaned.tsv): 400, one line."""
    return JSONResponse({"error": str(exc).splitlines()[0] if str(exc) else "bad request"},
                        status_code=400)


async def on_bug(request: Request, exc: Exception) -> Response:
    """Anything else: 500 with the exception's type, never a traceback."""
    return JSONResponse({"error": f"internal error: {type(exc).__name__}"}, status_code=500)


ROUTES = [
    Route("/", index),
    Route("/favicon.ico", favicon),
    Route("/static/{name}", static),
    Route("/api/run", overview),
    Route("/api/decide", decide),
    Route("/api/rows", rows),
    Route("/api/groups", groups),
    Route("/api/changes", changes),
    Route("/api/export", export, methods=["POST"]),
]


def create_app(data: RunData, save_dir: Path | None = None, host: str = "127.0.0.1",
               allow_hosts: Iterable[str] = ()) -> Starlette:
    """The Starlette application over ``data``; recipes are saved only inside ``save_dir``; it
    answers only requests addressed to ``host`` (where it is bound), as :class:`RequestGuard`
    says. The run, the save directory and the shared :class:`Decisions` live on ``app.state``."""
    handlers: dict[Any, Any] = {HTTPException: on_http_error, BitextforgeError: on_user_error,
                                Exception: on_bug}
    app = Starlette(routes=ROUTES, exception_handlers=handlers,
                    middleware=[Middleware(_Guarded, guard=RequestGuard(host, allow_hosts))])
    app.state.data = data
    app.state.save_dir = save_dir
    app.state.decisions = Decisions(data)
    return app
