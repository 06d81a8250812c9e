"""The Policies page: every recall policy of the namespace with its status, lineage,
training and off-policy evaluation, as the API reports them; in a real browser against a
real server whose worker trained them, and in-process over the test database."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from playwright.async_api import Browser

from app.core.config import Settings
from app.worker.runner import Worker
from bench.policyworld import PolicyWorld
from engram_client import Engram
from engram_client.models import Estimate, PolicyRead
from tests.client.policy_seed import log_recalls
from tests.conftest import DB_URL
from tests.server import EngramServer, serving
from tests.system.policy_drive import plant, run
from tests.ui.test_dashboard import Watch, sign_in

OPERATOR = "egk_policies-page-operator-key-0123456789"
LOGGED = 150
WAIT_S = 120.0


@dataclass
class Trained:
    server: EngramServer
    reader: str  # a reader key of the policies' namespace
    stranger: str  # an agent key of another namespace
    canary: PolicyRead
    failed: PolicyRead
    retired: PolicyRead


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trained]:
    if DB_URL:
        pytest.skip("this server runs on a SQLite file; the in-process test covers DB_URL")
    with serving(
        tmp_path_factory.mktemp("policies-page"),
        key=OPERATOR,
        ENGRAM_RECALL__SEED="7",
        ENGRAM_RECALL__EPSILON="0.3",
    ) as server:
        log = log_recalls(server.url, OPERATOR, n=LOGGED)
        with Engram(server.url, key=OPERATOR) as engram:
            canary = engram.policies.train(since=log.since, wait=True, timeout=WAIT_S)
            canary = engram.policies.activate(
                canary.id, canary_share=0.25, force=True, reason="page test: a canary"
            )
            # A window before any recall: nothing to learn from.
            failed = engram.policies.train(until=log.since, wait=True, timeout=WAIT_S)
            retired = engram.policies.train(since=log.since, wait=True, timeout=WAIT_S)
            retired = engram.policies.retire(retired.id)
        keys = []
        for role, namespace in (("reader", "default"), ("agent", "beta")):
            made = httpx.post(
                f"{server.url}/v1/keys",
                json={"role": role, "namespace": namespace},
                headers={"Authorization": f"Bearer {OPERATOR}"},
            )
            assert made.status_code == 201, made.text
            keys.append(made.json()["key"])
        yield Trained(server, *keys, canary=canary, failed=failed, retired=retired)


def cells(estimate: Estimate) -> str:
    """An estimate's two cells as the row's text has them."""
    return f"{estimate.value:.3f}\t[{estimate.low:.3f}, {estimate.high:.3f}]"


async def test_every_policy_with_its_evaluation(
    trained: Trained, browser: Browser, artifacts: Path
) -> None:
    base = trained.server.url
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    watch = Watch(page)
    await sign_in(page, base, trained.reader)
    async with page.expect_navigation(url=f"{base}/ui/policies"):
        await page.click("header nav a:text-is('Policies')")
    await page.screenshot(path=str(artifacts / "policies.png"), full_page=True)

    ids = await page.eval_on_selector_all("article.policy", "all => all.map(a => a.id)")
    made = [trained.canary.id, trained.failed.id, trained.retired.id]
    assert ids == [f"policy-{i}" for i in ["baseline_v0", *made]]  # baseline first, then by age
    badges = await page.locator("article.policy h2 .badge").all_inner_texts()
    assert badges == ["active", "canary", "failed", "retired"]
    assert await page.locator("main form").count() == 0  # read-only: nothing to submit

    canary = page.locator(f"#policy-{trained.canary.id}")
    text = await canary.inner_text()
    assert "Parent: baseline_v0, the policy deciding when it was trained." in text
    assert "Decides 25% of the recalls." in text
    assert f"Why canary: {trained.canary.status_reason}" in text
    training = trained.canary.training or {}
    fitted = await canary.locator("table.training tr").nth(1).inner_text()
    assert f"\t{training['n_train']}\t{training['n_holdout']}\t" in fitted
    evaluation = trained.canary.evaluation
    assert evaluation is not None
    for how in ("ips", "snips", "dr"):
        row = await canary.locator(f"tr.estimate-{how}").inner_text()
        mine, base_estimate = (evaluation.estimates[who][how] for who in ("policy", "baseline"))
        gain = evaluation.improvement.get(how)  # judged by IPS and DR, not SNIPS
        name = how.upper() + (" (verdict)" if evaluation.estimator == how else "")
        expected = f"{name}\t{cells(mine)}\t{cells(base_estimate)}\t"
        assert row == expected + (cells(gain) if gain else "–\t–")
    certify = await canary.locator("p.certify").inner_text()
    assert f"improvement of {evaluation.smallest_improvement:.3f} or more" in certify
    support = await canary.locator("p.support").inner_text()
    assert support.startswith(f"{evaluation.n_decisions} logged decisions from ")
    assert await canary.locator(".supported").inner_text() == (
        f"{100 * (evaluation.supported_share or 0):.0f}%"
    )
    assert await canary.locator(".ess").inner_text() == f"{evaluation.ess:.1f}"
    verdict = await canary.locator("p.verdict").inner_text()
    assert verdict == f"{(evaluation.verdict or '').replace('_', ' ')} {evaluation.reason}"

    failed = await page.inner_text(f"#policy-{trained.failed.id}")
    assert f"Failed: {trained.failed.error}" in failed
    assert "the window holds 0 rewarded recalls" in failed
    retired = await page.inner_text(f"#policy-{trained.retired.id}")
    assert "Why retired: retired by request" in retired

    # The lineage links to the parent's entry on the page.
    await canary.locator("p.lineage a").click()
    assert page.url == f"{base}/ui/policies#policy-baseline_v0"
    assert watch.problems == []
    await context.close()


async def test_another_namespace_sees_only_the_baseline(trained: Trained, browser: Browser) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    await sign_in(page, trained.server.url, trained.stranger)
    await page.goto(f"{trained.server.url}/ui/policies")
    ids = await page.eval_on_selector_all("article.policy", "all => all.map(a => a.id)")
    assert ids == ["policy-baseline_v0"]
    assert trained.canary.id not in await page.content()
    await context.close()


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.recall.seed = 7
    settings.recall.epsilon = 0.3
    settings.learning.worker = False  # the test runs the jobs itself
    return settings


async def test_the_page_over_the_test_database(app: FastAPI, client: httpx.AsyncClient) -> None:
    world = PolicyWorld(7)
    await plant(client, world)
    await run(client, world, n=60, seed=7)
    started = await client.post("/v1/policies/train", json={"folds": 2})
    assert started.status_code == 202, started.text
    before = await client.get("/ui/policies")
    assert "Evaluation pending: a job runs it." in before.text
    state = app.state.engram
    await Worker(state.transactions, state.settings.learning).drain()

    policy = (await client.get(f"/v1/policies/{started.json()['id']}")).json()
    page = await client.get("/ui/policies")
    assert page.status_code == 200
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert page.text.index('id="policy-baseline_v0"') < page.text.index(
        f'id="policy-{policy["id"]}"'
    )
    assert '<span class="badge candidate">candidate</span>' in page.text
    dr = policy["evaluation"]["estimates"]["policy"]["dr"]
    assert f"[{dr['low']:.3f}, {dr['high']:.3f}]" in page.text
    assert '<a href="/ui/policies" class="here" aria-current="page">Policies</a>' in page.text
