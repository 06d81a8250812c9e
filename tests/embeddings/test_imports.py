"""The semantic-search libraries load together in either order (usearch 2.26 with
onnxruntime imported after it crashed the process: a segmentation fault, no traceback)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("first", "second"), [("usearch.index", "onnxruntime"), ("onnxruntime", "usearch.index")]
)
def test_the_vector_index_and_the_model_runtime_load_together(first: str, second: str) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("usearch")
    code = f"import {first}; import {second}; print('loaded')"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"importing {first} then {second}: exit {r.returncode} {r.stderr}"
    assert r.stdout.strip() == "loaded"
