"""Bases of the client's models: requests refuse unknown fields, responses keep them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Request(BaseModel):
    """A request body: a misspelt field fails here, before the call."""

    model_config = ConfigDict(extra="forbid")


class Response(BaseModel):
    """A response body; fields a newer server adds are kept, not refused. Each one mirrors
    the server's schema of the same name (its fields are described in /openapi.json)."""

    model_config = ConfigDict(extra="allow")
