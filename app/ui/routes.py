"""The dashboard's pages: server-rendered, read-only, in the signed-in key's namespace."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse, StreamingResponse
from fastapi.templating import Jinja2Templates

from app.api.deps import SessionDep, StateDep
from app.learning.features import SCHEMA_VERSION
from app.schemas.filters import DatasetFilters
from app.services.access.auth import Principal
from app.services.dataset.download import download as dataset_download
from app.services.operations.dashboard import DashboardService
from app.services.policies.service import PolicyService
from app.ui import plots
from app.ui.session import (
    COOKIE,
    ENDED,
    LoginRequest,
    SignInNeeded,
    UIPrincipal,
    is_open_mode,
    sign_in,
    sign_out,
)

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")
templates.env.globals["plots"] = plots


def _utc(value: datetime | str | None) -> str:
    """A time as the pages show times: UTC, to the minute ("…" for none). Learned
    policies' training windows are stored as ISO 8601 text."""
    if not value:
        return "…"
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


templates.env.filters["utc"] = _utc
# Scripts and styles only from these pages' own files: an injected <script> or style
# attribute does not run. Plots are inline SVG elements, which need nothing more.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
STATIC = {
    "ui.css": ("text/css; charset=utf-8", (HERE / "static" / "ui.css").read_bytes()),
    "ui.js": ("text/javascript; charset=utf-8", (HERE / "static" / "ui.js").read_bytes()),
}
PAGES = [
    ("overview", "/ui", "Overview"),
    ("skills", "/ui/skills", "Skills"),
    ("patterns", "/ui/patterns", "Patterns"),
    ("recall", "/ui/recall", "Recall policy"),
    ("policies", "/ui/policies", "Policies"),
    ("episodes", "/ui/episodes", "Episodes"),
    ("dataset", "/ui/dataset", "Dataset"),
]
LIST_LIMIT = 100
router = APIRouter(include_in_schema=False)


def _render(
    request: Request, name: str, principal: Principal | None, status_code: int = 200, **ctx: Any
) -> HTMLResponse:
    ctx |= {"principal": principal, "pages": PAGES, "page": name.removesuffix(".html")}
    ctx["signed_in"] = bool(request.cookies.get(COOKIE))
    response = templates.TemplateResponse(request, name, ctx, status_code=status_code)
    response.headers["Content-Security-Policy"] = CSP
    return response


def _service(session: SessionDep, state: StateDep) -> DashboardService:
    return DashboardService(session, episodes=state.episodes)


async def on_sign_in_needed(request: Request, exc: Exception) -> Response:
    """A page asked for without a valid session: to the sign-in page (the stale cookie
    goes)."""
    assert isinstance(exc, SignInNeeded)
    target = "/ui/login?ended=1" if exc.message else "/ui/login"
    response = RedirectResponse(target, status_code=303)
    if exc.message:
        await sign_out(request, response)
    return response


@router.get("/ui/static/{name}")
async def static(name: str) -> Response:
    found = STATIC.get(name)
    if found is None:
        return Response("not found", status_code=404, media_type="text/plain")
    media_type, body = found
    return Response(body, media_type=media_type)


@router.get("/ui/login")
async def login_page(request: Request, ended: bool = False) -> HTMLResponse:
    message = ENDED if ended else None
    return _render(
        request, "login.html", None, message=message, open_mode=await is_open_mode(request)
    )


@router.post("/ui/login", status_code=204)
async def login(request: Request, body: LoginRequest) -> Response:
    """Sign in with an API key (401 with the reason when it is not valid)."""
    response = Response(status_code=204)
    await sign_in(request, response, body)
    return response


@router.post("/ui/logout", status_code=204)
async def logout(request: Request) -> Response:
    response = Response(status_code=204)
    await sign_out(request, response)
    return response


@router.get("/ui/")
async def slash() -> RedirectResponse:
    return RedirectResponse("/ui", status_code=308)


@router.get("/ui")
async def overview(
    request: Request, principal: UIPrincipal, session: SessionDep, state: StateDep
) -> HTMLResponse:
    now = datetime.now(UTC)
    data = await _service(session, state).overview(principal.namespace, now=now)
    return _render(request, "overview.html", principal, data=data)


@router.get("/ui/skills")
async def skills(
    request: Request, principal: UIPrincipal, session: SessionDep, state: StateDep
) -> HTMLResponse:
    views = await _service(session, state).skills(principal.namespace, limit=LIST_LIMIT)
    return _render(request, "skills.html", principal, skills=views)


@router.get("/ui/patterns")
async def patterns(
    request: Request, principal: UIPrincipal, session: SessionDep, state: StateDep
) -> HTMLResponse:
    floor = state.settings.learning.min_support
    found = await _service(session, state).patterns(
        principal.namespace, min_support=floor, limit=LIST_LIMIT
    )
    return _render(request, "patterns.html", principal, patterns=found, min_support=floor)


@router.get("/ui/recall")
async def recall(
    request: Request, principal: UIPrincipal, session: SessionDep, state: StateDep
) -> HTMLResponse:
    stats = await _service(session, state).recall(principal.namespace)
    return _render(request, "recall.html", principal, stats=stats)


@router.get("/ui/policies")
async def policies(
    request: Request, principal: UIPrincipal, session: SessionDep, state: StateDep
) -> HTMLResponse:
    service = PolicyService(session, recall=state.settings.recall, learning=state.settings.learning)
    found = await service.list(principal.namespace)
    return _render(request, "policies.html", principal, policies=found)


@router.get("/ui/episodes")
async def episodes(
    request: Request, principal: UIPrincipal, session: SessionDep, state: StateDep
) -> HTMLResponse:
    views = await _service(session, state).recent_episodes(
        principal.namespace, limit=30, now=datetime.now(UTC)
    )
    return _render(request, "episodes.html", principal, episodes=views)


@router.get("/ui/dataset")
async def dataset_page(
    request: Request, principal: UIPrincipal, session: SessionDep, state: StateDep
) -> HTMLResponse:
    rows, pending = await _service(session, state).dataset_size(principal.namespace)
    return _render(
        request,
        "dataset.html",
        principal,
        rows=rows,
        pending=pending,
        schema_version=SCHEMA_VERSION,
        per_download=10_000,
    )


@router.get("/ui/dataset/download")
async def download(
    request: Request,
    principal: UIPrincipal,
    session: SessionDep,
    state: StateDep,
    format: Literal["ndjson", "parquet"] = "ndjson",
    cursor: str | None = None,
) -> StreamingResponse:
    """GET /v1/rl/dataset for the signed-in key, saved as a file (`Link` names the next part)."""
    found = await dataset_download(
        session,
        state.transactions,
        principal.namespace,
        format=format,
        table="transitions",
        filters=DatasetFilters(),
        cursor=cursor,
        limit=10_000,
        slots=state.settings.recall.candidate_slots,
    )
    headers = found.headers(request.url.path, request.query_params, attachment=True)
    return StreamingResponse(found.body, media_type=found.media_type, headers=headers)
