"""The shop project of the agent world: a Python service run with uv, and its kinds of work."""

from __future__ import annotations

import random

from bench.agentkinds import (
    PYTEST_FAIL,
    PYTEST_OK,
    Kind,
    Project,
    Slots,
    Step,
    commit_ok,
    hex_digits,
    not_found,
    version_slots,
)


def _migration(rng: random.Random) -> Slots:
    table = rng.choice(["orders", "customers", "invoices", "payments", "shipments", "coupons"])
    column, kind = rng.choice(
        [("discount_code", "String"), ("archived_at", "DateTime"), ("tax_rate", "Numeric"),
         ("external_ref", "String"), ("notes", "Text"), ("currency", "String")]
    )  # fmt: skip
    return {"table": table, "column": column, "type": kind, "rev": hex_digits(rng, 12)}


def _failing_test(rng: random.Random) -> Slots:
    module = rng.choice(["cart", "pricing", "checkout", "inventory", "orders", "shipping"])
    case = rng.choice(["rounding", "empty", "discount", "currency", "timezone", "limits"])
    return {"module": module, "case": f"test_{module}_{case}"}


RELEASE = Kind(
    project="shop",
    name="release",
    steps=(
        Step("Edit", "pyproject.toml", known=0.8, old='version = "{prev}"', ok='version = "{version}"'),
        Step("Edit", "CHANGELOG.md", key=False, known=0.6, old="## Unreleased",
             ok="## Unreleased\n\n## {version} - {date}"),
        Step("Bash", "uv run pytest -q", known=0.85, check=True, ok=PYTEST_OK, fail=PYTEST_FAIL,
             wrong="pytest -q", wrong_error=not_found("pytest")),
        Step("Bash", 'git commit -am "release {version}"', known=0.85, ok=commit_ok("release {version}")),
        Step("Bash", "git tag v{version}", known=0.6),
        Step("Bash", "git push origin main --tags", known=0.5,
             ok="To github.com:acme/shop.git\n   4be1c0d..{sha7}  main -> main\n"
             " * [new tag]         v{version} -> v{version}"),
    ),
    prompts=(
        "cut release {version}", "can you ship version {version}?", "release {version} please",
        "tag and publish a new patch release, {version}", "time for a release: {version}",
        "bump us to {version} and release it", "do the release for {version}",
        "we need {version} out today, can you release it", "new release pls, version {version}",
        "prepare {version} for release please", "ship {version}", "let's get v{version} released",
    ),
    complaints=(
        "the release workflow never ran, there's no v{version} tag on github",
        "pypi still shows {prev}, the release didn't go out", "CI is red on the release commit",
    ),
    slots=version_slots,
)  # fmt: skip

MIGRATION = Kind(
    project="shop",
    name="migration",
    steps=(
        Step("Bash", 'uv run alembic revision --autogenerate -m "add {column} to {table}"', known=0.6,
             ok="  Generating /home/dev/shop/migrations/versions/{rev}_add_{column}_to_{table}.py ...  done",
             wrong='alembic revision --autogenerate -m "add {column} to {table}"',
             wrong_error=not_found("alembic")),
        Step("Edit", "migrations/versions/{rev}_add_{column}_to_{table}.py", known=0.45,
             old='sa.Column("{column}", sa.{type}(), nullable=False)',
             ok='sa.Column("{column}", sa.{type}(), nullable=True)'),
        Step("Bash", "uv run alembic upgrade head", known=0.55, check=True,
             ok="INFO  [alembic.runtime.migration] Running upgrade -> {rev}, add {column} to {table}",
             fail="sqlalchemy.exc.IntegrityError: (sqlite3.IntegrityError) NOT NULL constraint "
             "failed: {table}.{column}"),
        Step("Bash", "uv run pytest -q tests/test_models.py", known=0.8, check=True, ok=PYTEST_OK,
             fail="E   sqlalchemy.exc.OperationalError: no such column: {table}.{column}\n"
             "3 failed, {n} passed in {secs}s"),
    ),
    prompts=(
        "add a {column} column to {table}", "we need {table}.{column}, can you add the migration",
        "new migration: {column} on the {table} table", "add {column} to {table} (nullable for now)",
        "create a db migration adding {column} to {table}", "schema change: {table} gets a {column} field",
        "can you add {column} to the {table} model and migrate", "migration for {table}.{column} please",
        "I need a {column} column in {table}", "write the alembic migration for {table}.{column}",
        "add a nullable {column} to {table} and run the migration", "let's store {column} on {table}",
    ),
    complaints=(
        "the migration didn't apply, staging says no such column {table}.{column}",
        "alembic upgrade fails on staging now", "that broke the build, test_models is red",
    ),
    slots=_migration,
)  # fmt: skip

FIX_TEST = Kind(
    project="shop",
    name="fix-test",
    steps=(
        Step("Bash", "uv run pytest -q tests/test_{module}.py -x", key=False, known=0.8, fails=True,
             ok="F\nFAILED tests/test_{module}.py::{case} - AssertionError\n1 failed in {secs}s"),
        Step("Edit", "app/{module}.py", known=0.95, old="return round(total, 2)",
             ok='return total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)'),
        Step("Bash", "uv run pytest -q tests/test_{module}.py", known=0.85, check=True,
             ok=PYTEST_OK, fail="FAILED tests/test_{module}.py::{case}\n1 failed, {n} passed"),
        Step("Bash", "uv run ruff check app", known=0.4, ok="All checks passed!",
             wrong="ruff check app", wrong_error=not_found("ruff")),
        Step("Bash", "uv run pytest -q", known=0.6, check=True, ok=PYTEST_OK, fail=PYTEST_FAIL),
    ),
    prompts=(
        "{case} is failing, can you fix it", "fix the failing test in tests/test_{module}.py",
        "CI is red: {case}", "tests/test_{module}.py fails since yesterday, please look",
        "can you make {case} pass again", "{case} broke, fix it",
        "there's a failing test in {module}, sort it out", "fix {case} please",
        "why does {case} fail? fix it", "the {module} tests are red, can you fix them",
        "please fix the broken {module} test", "{case} keeps failing on main",
    ),
    complaints=(
        "CI is still red", "ruff fails on CI now", "you broke another test, the full suite fails",
    ),
    slots=_failing_test,
)  # fmt: skip

SHOP = Project(
    name="shop",
    cwd="/home/dev/shop",
    kinds=(RELEASE, MIGRATION, FIX_TEST),
    files={
        "pyproject.toml": '[project]\nname = "shop"\nversion = "{prev}"\nrequires-python = ">=3.11"\n'
        'dependencies = ["fastapi>=0.115", "sqlalchemy>=2.0", "alembic>=1.13"]\n',
        "CHANGELOG.md": "# Changelog\n\n## Unreleased\n\n- Faster cart totals\n\n## {prev}\n\n- Fixes\n",
        "README.md": "# shop\n\nRun it: `uv run uvicorn app.main:app --reload`\nTests: `uv run pytest -q`\n",
        "app/models.py": "from sqlalchemy.orm import Mapped, mapped_column\n\n\nclass Order(Base):\n"
        '    __tablename__ = "orders"\n    id: Mapped[int] = mapped_column(primary_key=True)\n',
        "alembic.ini": "[alembic]\nscript_location = migrations\nsqlalchemy.url = sqlite:///shop.db\n",
    },
    globs=(
        ("**/*.py", ("app/main.py", "app/models.py", "app/cart.py", "app/pricing.py", "tests/conftest.py")),
        ("tests/**/*.py", ("tests/test_cart.py", "tests/test_pricing.py", "tests/test_models.py")),
        ("migrations/versions/*.py", ("migrations/versions/3c1f9a7d2e10_create_orders.py",)),
    ),
    greps=(
        ("def total", ("app/cart.py", "app/pricing.py")), ("__tablename__", ("app/models.py",)),
        ("version", ("pyproject.toml", "app/__init__.py")), ("Decimal", ("app/pricing.py", "app/cart.py")),
    ),
    looks=(
        ("git status", "On branch main\nYour branch is up to date with 'origin/main'.\n\nnothing to commit, working tree clean"),
        ("ls", "CHANGELOG.md\nREADME.md\nalembic.ini\napp\nmigrations\npyproject.toml\ntests\nuv.lock"),
        ("git log --oneline -5", "{sha7} Merge pull request #214 from acme/cart-totals\n9d2c1e4 Faster cart totals"),
        ("cat pyproject.toml", '[project]\nname = "shop"\nversion = "{prev}"'),
        ("uv run alembic current", "3c1f9a7d2e10 (head)"),
    ),
    extras=(
        ("uv run ruff format app tests", "2 files reformatted, 31 files left unchanged"),
        ("uv run python -c \"import sqlalchemy; print(sqlalchemy.__version__)\"", "2.0.36"),
        ("uv sync", "Resolved 41 packages in 12ms\nAudited 39 packages in 3ms"),
    ),
    follow_ups=(
        ("can you also note it in the README?", Step("Edit", "README.md", old="Tests: `uv run pytest -q`",
                                                     ok="Tests: `uv run pytest -q` (see CHANGELOG.md)")),
        ("run mypy on it too", Step("Bash", "uv run mypy app", ok="Success: no issues found in 33 source files")),
        ("what does git log look like now?", Step("Bash", "git log --oneline -3", ok="{sha7} wip")),
    ),
)  # fmt: skip
