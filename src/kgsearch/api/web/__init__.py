"""The web UI: static pages served by the REST app at ``/ui``.

The page and its assets carry no data and need no key; every piece of data comes
from the API with the same authentication as any client (the key the user enters is
kept in the browser tab's ``sessionStorage``). A strict Content-Security-Policy
allows only this server's own scripts and styles, so text that slipped into markup
still could not run.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, RedirectResponse
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["STATIC", "mount"]

STATIC = Path(__file__).parent / "static"

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-cache",
}


class _Headers:
    """Adds the security headers to every response of the wrapped app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _index() -> FileResponse:
    """The single page of the UI."""
    return FileResponse(STATIC / "index.html", headers=SECURITY_HEADERS)


async def _to_ui() -> RedirectResponse:
    return RedirectResponse("/ui/", status_code=307)


def mount(app: FastAPI) -> None:
    """Serve the UI at ``/ui/`` (``/ui`` redirects there) and its assets at
    ``/ui/static/``."""
    app.add_api_route("/ui", _to_ui, methods=["GET"], include_in_schema=False)
    app.add_api_route("/ui/", _index, methods=["GET"], include_in_schema=False)
    app.mount("/ui/static", _Headers(StaticFiles(directory=STATIC)), name="ui-static")
