"""The dashboard at /ui: server-rendered pages over the same services and keys as the API."""

from __future__ import annotations

from fastapi import FastAPI

from app.ui.routes import on_sign_in_needed, router
from app.ui.session import SignInNeeded


def install_ui(app: FastAPI) -> None:
    """Serve the pages and send a browser without a valid key to the sign-in page."""
    app.add_exception_handler(SignInNeeded, on_sign_in_needed)
    app.include_router(router)
