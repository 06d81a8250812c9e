"""`engram backup` and `engram restore`, with progress bars on stderr."""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from sqlalchemy.exc import SQLAlchemyError

from app.core.config import Settings, get_settings
from app.core.errors import AppError
from app.services.operations.backup_format import PAYLOADS, ArchiveError
from app.services.operations.restore import (
    Contents,
    RestoreRefused,
    check_compatible,
    restore,
    verify,
)
from app.storage import BlobStore, open_blob_store
from app.storage.blobs import BlobStoreError
from app.storage.snapshot import StoreInUse

console = Console(stderr=True)
BLOCK = 1 << 16


def _fail(message: str) -> typer.Exit:
    console.print(f"engram: {message}", style="red", markup=False, highlight=False)
    return typer.Exit(1)


def _bar(*, transfer: bool = False) -> Progress:
    counts = (DownloadColumn(), TransferSpeedColumn()) if transfer else (MofNCompleteColumn(),)
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        *counts,
        TimeElapsedColumn(),
        console=console,
    )


def _verify(path: Path) -> Contents:
    with _bar(transfer=True) as bar:
        task = bar.add_task("verifying", total=path.stat().st_size)
        return verify(path, on_bytes=lambda n: bar.advance(task, n))


def _summary(contents: Contents, verb: str, path: Path, seconds: float) -> None:
    rows = sum(contents.rows.values())
    size = path.stat().st_size
    console.print(
        f"{verb} {rows:,} rows in {sum(1 for n in contents.rows.values() if n)} tables and "
        f"{contents.payloads:,} payloads ({contents.payload_bytes / 1e6:.1f} MB) "
        f"{'to' if verb == 'backed up' else 'from'} {path} ({size / 1e6:.1f} MB) "
        f"in {seconds:.1f} s",
        highlight=False,
    )
    for name, count in contents.rows.items():
        if count:
            console.print(f"  {name:<20} {count:>10,}", highlight=False)


def _download(url: str, key: str | None, part: Path) -> None:
    request = urllib.request.Request(f"{url.rstrip('/')}/v1/admin/backup")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        response = urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as exc:
        detail = exc.read()
        with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
            detail = orjson.loads(detail).get("detail", detail)
        raise _fail(f"{url} refused the backup: {exc.code} {detail!s}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise _fail(
            f"cannot reach {url}: {exc} (pass --url of the server that holds the stores)"
        ) from exc
    with response, part.open("wb") as out, _bar(transfer=True) as bar:
        task = bar.add_task("downloading", total=None)
        while block := response.read(BLOCK):
            out.write(block)
            bar.advance(task, len(block))


async def _local(settings: Settings, part: Path, store: BlobStore) -> None:
    from app.db.backends import create_engine
    from app.services.operations import backup

    engine = create_engine(settings)
    try:
        snapshot = await backup.open_snapshot(engine, store.snapshot)
        with part.open("wb") as out, _bar() as bar:
            rows = bar.add_task("tables", total=snapshot.rows)
            payloads = bar.add_task("payloads", total=None)

            def advance(section: str, count: int) -> None:
                bar.advance(payloads if section == PAYLOADS else rows, count)

            async for block in backup.archive(snapshot, on_records=advance):
                out.write(block)
    finally:
        await engine.dispose()


@contextlib.contextmanager
def _partial(path: Path) -> Iterator[Path]:
    """A file beside path that becomes path only when the block succeeds."""
    part = path.with_name(path.name + ".part")
    try:
        yield part
        part.replace(path)
    finally:
        part.unlink(missing_ok=True)


def backup_command(
    path: Annotated[Path, typer.Argument(help="Archive to write (.tar.gz)")],
    url: Annotated[
        str | None, typer.Option(help="A running server (default: this host's, if one runs)")
    ] = None,
    key: Annotated[
        str | None, typer.Option(envvar="ENGRAM_API_KEY", help="An operator key")
    ] = None,
) -> None:
    """Write a consistent snapshot of the database and the payloads, while the service runs."""
    settings = get_settings()
    if not path.parent.is_dir():
        raise _fail(f"no directory {path.parent} to write the archive into")
    started = time.monotonic()
    with _partial(path) as part:
        store = None
        if url is None:
            try:
                store = open_blob_store(settings)  # LevelDB: StoreInUse while a server runs
            except StoreInUse:
                host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
                url = f"http://{host}:{settings.port}"
            except BlobStoreError as exc:
                raise _fail(str(exc)) from exc
        if store is None:
            assert url is not None
            console.print(f"backing up the server at {url}", highlight=False)
            _download(url, key, part)
        else:
            console.print("reading the stores directly")
            try:
                asyncio.run(_local(settings, part, store))
            except (AppError, SQLAlchemyError, OSError) as exc:
                raise _fail(f"cannot read the stores: {exc}") from exc
            finally:
                store.close()
        try:
            contents = _verify(part)
        except ArchiveError as exc:
            raise _fail(f"the backup is incomplete: {exc}") from exc
    _summary(contents, "backed up", path, time.monotonic() - started)


def restore_command(
    path: Annotated[Path, typer.Argument(help="Archive written by `engram backup`")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace the data of non-empty stores")
    ] = False,
) -> None:
    """Restore an archive into the configured stores (the service must be stopped)."""
    settings = get_settings()
    if not path.is_file():
        raise _fail(f"no archive at {path}")
    started = time.monotonic()
    try:
        contents = _verify(path)
        check_compatible(contents)
        with _bar() as bar:
            task = bar.add_task("restoring", total=contents.records)
            asyncio.run(
                restore(
                    path,
                    contents,
                    settings,
                    force=force,
                    on_records=lambda n: bar.advance(task, n),
                )
            )
    except (ArchiveError, RestoreRefused, BlobStoreError) as exc:
        raise _fail(str(exc)) from exc
    except (SQLAlchemyError, OSError) as exc:
        raise _fail(f"cannot restore into {settings.database_url}: {exc}") from exc
    _summary(contents, "restored", path, time.monotonic() - started)
