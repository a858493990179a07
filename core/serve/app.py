"""The web application of ``bitextforge serve``: one page over a finished run and a small JSON API.

Starlette routes, served by uvicorn. The API only reads the run held in memory
(:class:`bitextforge.serve.data.RunData`); the one write is ``POST /api/export``, which saves a
recipe under a bare file name inside the save directory given at start. Every bad request (bounds
that are not numbers or contradict each other, a page size over :data:`MAX_LIMIT`, a file name with
a path in it) gets a 4xx answer with a one-line JSON error and no traceback.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..errors import BitextforgeError
from ..recipe import KeepSpec
from .data import Decision, RunData

MAX_LIMIT = 200
SAVE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}\.ya?ml$")
STATIC = ("page.js", "page.css")


def plotly_js() -> Path:
    """plotly.js as the ``plotly`` wheel ships it (no CDN: the page works offline)."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _bad(msg: str, status: int = 400) -> HTTPException:
    return HTTPException(status_code=status, detail=msg)


def parse_keep(raw: str | None, data: RunData) -> dict[int, KeepSpec]:
    """``keep`` query parameter: JSON ``{"step index": {"min": .., "max": .., "top": ..}}``."""
    if not raw:
        return {}
    if len(raw) > 10_000:
        raise _bad("keep: too long")
    try:
        obj = json.loads(raw)
    except ValueError:
        raise _bad("keep: not JSON") from None
    if not isinstance(obj, dict):
        raise _bad("keep: expected an object of step index -> bounds")
    out: dict[int, KeepSpec] = {}
    for key, value in obj.items():
        if not str(key).isdigit():
            raise _bad(f"keep: {key!r} is not a step index")
        index = int(key)
        if not 0 <= index < len(data.steps) or data.steps[index].kind != "filter" \
                or not data.steps[index].editable:
            raise _bad(f"keep: steps[{index}] is not a filter step whose bounds can change")
        if not isinstance(value, dict):
            raise _bad(f"keep: steps[{index}]: expected an object")
        for k, v in value.items():
            if isinstance(v, bool) or (v is not None and not isinstance(v, (int, float, str))):
                raise _bad(f"keep: steps[{index}].{k}: not a number")
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


def create_app(data: RunData, save_dir: Path | None = None) -> Starlette:
    """The Starlette application over ``data``; recipes are saved only inside ``save_dir``."""
    cache: OrderedDict[str, Decision] = OrderedDict()

    def decision(request: Request) -> Decision:
        keeps = parse_keep(request.query_params.get("keep"), data)
        key = json.dumps({k: v.model_dump() for k, v in sorted(keeps.items())})
        if key not in cache:
            cache[key] = data.decide(keeps)
            while len(cache) > 4:  # about 10 MB each at 1M rows
                cache.popitem(last=False)
        cache.move_to_end(key)
        return cache[key]

    def step_index(request: Request) -> int:
        return _int(request, "step", 0, 0, max(0, len(data.steps) - 1))

    async def index(request: Request) -> Response:
        page = resources.files("bitextforge.serve").joinpath("static", "page.html").read_text(
            encoding="utf-8")
        return HTMLResponse(page)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name == "plotly.min.js":
            return FileResponse(plotly_js(), media_type="text/javascript")
        if name not in STATIC:
            raise _bad("not found", 404)
        path = resources.files("bitextforge.serve").joinpath("static", name)
        media = "text/javascript" if name.endswith(".js") else "text/css"
        return Response(path.read_text(encoding="utf-8"), media_type=media)

    async def overview(request: Request) -> Response:
        return JSONResponse(data.overview())

    async def decide(request: Request) -> Response:
        return JSONResponse(data.summary(decision(request)))

    async def rows(request: Request) -> Response:
        dec = decision(request)
        side = request.query_params.get("side", "rejected")
        query = request.query_params.get("q", "")[:200]
        return JSONResponse(data.rows(dec, step_index(request), side, query,
                                      _int(request, "offset", 0, 0, 10**9),
                                      _int(request, "limit", 20, 1, MAX_LIMIT)))

    async def groups(request: Request) -> Response:
        dec = decision(request)
        query = request.query_params.get("q", "")[:200]
        return JSONResponse(data.groups(dec, step_index(request), query,
                                        _int(request, "offset", 0, 0, 10**9),
                                        _int(request, "limit", 10, 1, MAX_LIMIT)))

    async def export(request: Request) -> Response:
        if save_dir is None:
            raise _bad("saving is off (start bitextforge serve with --save-dir)", 403)
        try:
            body = await request.json()
        except ValueError:
            raise _bad("body: not JSON") from None
        if not isinstance(body, dict):
            raise _bad("body: expected an object with name and keep")
        name = body.get("name")
        if not isinstance(name, str) or not SAVE_NAME.match(name):
            raise _bad("name: a file name ending in .yaml, without a directory "
                       "(letters, digits, . _ -)")
        keep = body.get("keep") or {}
        keeps = parse_keep(json.dumps(keep) if not isinstance(keep, str) else keep, data)
        target = (save_dir / name).resolve()
        if target.parent != save_dir.resolve():
            raise _bad("name: outside the save directory")
        path = data.export_recipe(keeps, target)
        dec = decision_for(keeps)
        return JSONResponse({"path": str(path), "kept": dec.kept,
                             "command": f"bitextforge run {path}"})

    def decision_for(keeps: dict[int, KeepSpec]) -> Decision:
        return data.decide(keeps)

    async def on_http_error(request: Request, exc: HTTPException) -> Response:
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code)

    async def on_user_error(request: Request, exc: BitextforgeError) -> Response:
        return JSONResponse({"error": str(exc).splitlines()[0] if str(exc) else "bad request"},
                            status_code=400)

    async def on_bug(request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": f"internal error: {type(exc).__name__}"}, status_code=500)

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    routes = [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/static/{name}", static),
        Route("/api/run", overview),
        Route("/api/decide", decide),
        Route("/api/rows", rows),
        Route("/api/groups", groups),
        Route("/api/export", export, methods=["POST"]),
    ]
    handlers: dict[Any, Any] = {HTTPException: on_http_error, BitextforgeError: on_user_error,
                                Exception: on_bug}
    return Starlette(routes=routes, exception_handlers=handlers)
