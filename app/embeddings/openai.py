"""Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, vLLM, LM Studio)."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from app.core.config import Embeddings
from app.embeddings.base import EmbeddingError, EmbeddingUnavailable, Vectors, batches, normalised

# Statuses worth another try: rate limited, or the server's own trouble.
RETRIED = {429, 500, 502, 503, 504}


class _Retry(Exception):
    def __init__(self, reason: str, *, wait_s: float | None = None) -> None:
        super().__init__(reason)
        self.wait_s = wait_s


class OpenAIEmbedder:
    """Batched requests with retries (exponential backoff, jitter, Retry-After) and a timeout."""

    def __init__(
        self,
        settings: Embeddings,
        *,
        backoff_s: float = 0.5,
        max_wait_s: float = 30.0,
    ) -> None:
        """`backoff_s` is the first retry's wait (doubled each time); `max_wait_s` caps a wait."""
        self.url = settings.base_url.rstrip("/") + "/embeddings"
        # Errors name the endpoint, never credentials written into its URL.
        url = httpx.URL(self.url)
        if url.scheme not in ("http", "https") or not url.host:
            raise EmbeddingUnavailable(
                "ENGRAM_EMBEDDINGS__BASE_URL must be an http(s) URL such as "
                "https://api.openai.com/v1 or http://127.0.0.1:11434/v1"
            )
        self.shown = str(url.copy_with(userinfo=b""))
        self.name = settings.model
        self.dimensions = settings.dimensions
        self.batch_size = settings.batch_size
        self.max_retries = settings.max_retries
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        self.dim: int = settings.dimensions or 0
        self.model = f"openai:{self.name}@{self.dim}"
        headers = {"Accept": "application/json"}
        if settings.api_key is not None:
            headers["Authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
        self._client = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(settings.timeout_s), follow_redirects=False
        )

    async def start(self) -> None:
        """Embed one text, so a wrong URL, key or model fails at startup and `dim` is known."""
        try:
            await self.embed(["dimension probe"])
        except EmbeddingError as exc:
            raise EmbeddingUnavailable(f"the embeddings endpoint cannot be used: {exc}") from exc

    async def embed(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        """Embed in requests of batch_size texts, rows in the order of `texts` (the
        endpoint's work is elsewhere: `background` changes nothing here)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [await self._batch(batch) for batch in batches(texts, self.batch_size)]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    async def close(self) -> None:
        """Close the connections."""
        await self._client.aclose()

    async def _batch(self, texts: Sequence[str]) -> Vectors:
        # OpenAI refuses an empty string; a space embeds as nothing in particular.
        body: dict[str, Any] = {"model": self.name, "input": [t or " " for t in texts]}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        for attempt in range(self.max_retries + 1):
            try:
                return self._parse(await self._post(body), count=len(texts))
            except _Retry as retry:
                if attempt == self.max_retries:
                    raise EmbeddingError(
                        f"{self.shown} failed {attempt + 1} time(s), giving up: {retry}"
                    ) from None
                await asyncio.sleep(self._wait(attempt, retry.wait_s))
        raise AssertionError("unreachable")

    def _wait(self, attempt: int, asked_s: float | None) -> float:
        if asked_s is not None:
            return min(max(asked_s, 0.0), self.max_wait_s)
        base = self.backoff_s * 2.0**attempt
        # Jitter keeps clients that failed together from coming back together.
        return min(base + random.uniform(0, base), self.max_wait_s)

    async def _post(self, body: dict[str, Any]) -> Any:
        try:
            response = await self._client.post(self.url, json=body)
        except httpx.TimeoutException:
            raise _Retry("timed out (ENGRAM_EMBEDDINGS__TIMEOUT_S)") from None
        except httpx.TransportError as exc:
            raise _Retry(f"cannot connect: {exc!r}") from None
        if response.status_code in RETRIED:
            raise _Retry(
                f"answered {response.status_code}: {_message(response)}",
                wait_s=_retry_after(response) if response.status_code in (429, 503) else None,
            )
        if response.is_redirect:
            raise EmbeddingError(
                f"{self.shown} redirects to {response.headers.get('location')}: set "
                "ENGRAM_EMBEDDINGS__BASE_URL to where it leads"
            )
        if response.status_code >= 400:
            hint = " (ENGRAM_EMBEDDINGS__API_KEY)" if response.status_code in (401, 403) else ""
            raise EmbeddingError(
                f"{self.shown} answered {response.status_code}{hint}: {_message(response)}"
            )
        try:
            return response.json()
        except ValueError:
            raise EmbeddingError(f"{self.shown} answered with something other than JSON") from None

    def _parse(self, payload: Any, *, count: int) -> Vectors:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(f"{self.shown} answered without a `data` list")
        if len(data) != count:
            raise EmbeddingError(f"{self.shown} returned {len(data)} embeddings for {count} texts")
        rows: dict[int, Any] = {}
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or index in rows:
                raise EmbeddingError(f"{self.shown} returned a bad or repeated index: {index!r}")
            rows[index] = item.get("embedding")
        try:
            matrix = np.array([rows[i] for i in range(count)])
        except ValueError:
            raise EmbeddingError(f"{self.shown} returned embeddings of different sizes") from None
        if (
            matrix.ndim != 2
            or matrix.shape[1] == 0
            or matrix.dtype.kind not in "iuf"
            or not np.isfinite(matrix).all()
        ):
            raise EmbeddingError(f"{self.shown} returned embeddings that are not lists of numbers")
        if self.dim == 0:
            self.dim = matrix.shape[1]
            self.model = f"openai:{self.name}@{self.dim}"
        if matrix.shape[1] != self.dim:
            raise EmbeddingError(
                f"{self.shown} returned vectors of {matrix.shape[1]} numbers, expected {self.dim}"
                + (" (ENGRAM_EMBEDDINGS__DIMENSIONS)" if self.dimensions else "")
            )
        # Not every server normalises (Ollama does not): cosine needs unit rows.
        return normalised(matrix)


def _message(response: httpx.Response) -> str:
    """The server's own error message, short."""
    try:
        payload = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    if isinstance(error, str):
        return error[:300]
    return str(payload)[:300]


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked to wait (a number or an HTTP date), if it asked."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()
