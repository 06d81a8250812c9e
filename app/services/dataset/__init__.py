"""The RL dataset: completed transitions (or one row per candidate), streamed as NDJSON
or written as Parquet, with a metadata document describing every field. Its columns are
declared once, in columns.py."""

from app.services.dataset.columns import TABLES, TableName
from app.services.dataset.export import DatasetExport
from app.services.dataset.formats import FORMATS, Format, FormatName
from app.services.dataset.metadata import metadata

__all__ = ["FORMATS", "TABLES", "DatasetExport", "Format", "FormatName", "TableName", "metadata"]
