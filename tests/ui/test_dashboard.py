"""The dashboard in a real browser (Debian's chromium, driven by Playwright) against a real
`engram serve` seeded over HTTP: every page loads without a console error or a failed
request, its plots have points, signing in and out works, a bad key is refused with the
reason, the cookie is HttpOnly and SameSite=Strict, another namespace stays unseen, and
a page of another site cannot sign in or read through the cookie."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, BrowserContext, Page

from tests.ui.conftest import MARKER, Seeded

PAGES = ["overview", "skills", "patterns", "recall", "policies", "episodes", "dataset"]
# Another site on this machine (a browser lets a loopback page call loopback services).
EVIL = "http://localhost:8931"


class Watch:
    """Console errors, uncaught exceptions and failed or refused requests of one page."""

    def __init__(self, page: Page) -> None:
        self.problems: list[str] = []
        page.on(
            "console",
            lambda m: self.problems.append(f"console: {m.text}") if m.type == "error" else None,
        )
        page.on("pageerror", lambda e: self.problems.append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: self.problems.append(f"failed: {r.url} {r.failure}"))
        page.on(
            "response",
            lambda r: self.problems.append(f"{r.status}: {r.url}") if r.status >= 400 else None,
        )


def _path(name: str) -> str:
    return "/ui" if name == "overview" else f"/ui/{name}"


async def sign_in(page: Page, base: str, key: str) -> None:
    await page.goto(f"{base}/ui/login")
    await page.fill("#key", key)
    async with page.expect_navigation(url=f"{base}/ui"):
        await page.click("form.login button")


async def _cookie(context: BrowserContext) -> dict[str, object] | None:
    found = [c for c in await context.cookies() if c["name"] == "engram_ui_session"]
    return dict(found[0]) if found else None


async def test_every_page_loads_with_its_data_and_no_error(
    seeded: Seeded, browser: Browser, artifacts: Path, tmp_path: Path
) -> None:
    base = seeded.server.url
    context = await browser.new_context(
        accept_downloads=True, viewport={"width": 1280, "height": 900}
    )
    page = await context.new_page()
    watch = Watch(page)
    await page.goto(f"{base}/ui")
    assert page.url == f"{base}/ui/login"  # no key yet: sent to sign in
    await sign_in(page, base, seeded.keys.reader)

    cookie = await _cookie(context)
    assert cookie is not None
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/ui"
    assert cookie["secure"] is False  # plain http here; https sets Secure
    assert cookie["value"] != seeded.keys.reader  # a session's token, never the key
    assert await page.evaluate("document.cookie") == ""  # no script can read it

    for name in PAGES:
        answer = await page.goto(f"{base}{_path(name)}")
        assert answer is not None
        assert answer.status == 200, name
        assert "alpha" in await page.inner_text("header .namespace")
        assert MARKER not in await page.content(), f"namespace beta's data on {name}"
        await page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)
        if name == "overview":
            assert await page.inner_text("#n-episodes") == "80"
            assert await page.locator("svg.plot").count() == 3
            # The 30 days of episodes: today's bar has height, the others are zero.
            heights = await page.eval_on_selector_all(
                "rect.bar", "bars => bars.map(b => Number(b.getAttribute('height')))"
            )
            assert len(heights) == 30
            assert heights[-1] > 0
            # 80 outcomes and 62 rewards drawn as 20 and 16 to 21 group means.
            circles = await page.eval_on_selector_all(
                "svg.plot", "plots => plots.map(p => p.querySelectorAll('circle.pt').length)"
            )
            assert circles[1] == 20
            assert circles[2] >= 16
        elif name == "skills":
            first = page.locator("article.skill").first
            assert "git.clone" in await first.inner_text()
            kinds = await page.locator(".event-kind").all_inner_texts()
            assert {"created", "activated", "specialised"} <= set(kinds)
            # The lineage: the procedure, and its child that works on the web only.
            child = page.locator("article.skill:has(p.trigger)")
            assert await child.count() == 1
            text = await child.inner_text()
            assert "When domain=web" in text
            assert "From: deploy" in text
        elif name == "patterns":
            text = await page.inner_text("table.patterns")
            assert "git.clone → pip.install → pytest.run" in text
        elif name == "recall":
            assert await page.inner_text("#exploration") != "0.0%"
            assert await page.locator("svg.plot rect.bar").count() >= 2
            assert "constraint" in await page.inner_text("table.by-type")
        elif name == "policies":
            # No policy learned here (the worker is off): baseline_v0's rules decide.
            titles = await page.locator("article.policy h2").all_inner_texts()
            assert [" ".join(t.split()[:2]) for t in titles] == ["baseline_v0 active"]
        elif name == "episodes":
            assert await page.locator("table.episodes tr").count() == 31  # 30 and a heading
            assert await page.locator(".reflection").count() >= 1
        elif name == "dataset":
            assert await page.inner_text("#dataset-rows") == "18"  # 24 recalls, 18 rewarded
            async with page.expect_download() as info:
                await page.click("#download-ndjson")
            download = await info.value
            saved = tmp_path / "dataset.ndjson"
            await download.save_as(saved)
            assert len(saved.read_text().splitlines()) == 18
    # A download that is saved rather than shown ends the page's request as "aborted".
    problems = [p for p in watch.problems if "/ui/dataset/download" not in p]
    assert problems == []
    await context.close()


async def test_a_bad_key_is_refused_with_the_reason(
    seeded: Seeded, browser: Browser, artifacts: Path
) -> None:
    base = seeded.server.url
    context = await browser.new_context()
    page = await context.new_page()
    watch = Watch(page)
    await page.goto(f"{base}/ui/login")
    await page.fill("#key", "egk_not-a-key-of-this-service")
    await page.click("form.login button")
    error = page.locator("form.login .error")
    await error.wait_for(state="visible")
    assert "invalid or revoked API key" in await error.inner_text()
    assert page.url == f"{base}/ui/login"
    assert await _cookie(context) is None
    await page.screenshot(path=str(artifacts / "login-refused.png"))
    # The refusal itself (and the console's line about it) is the only problem.
    assert watch.problems == [
        f"401: {base}/ui/login",
        "console: Failed to load resource: the server responded with a status of 401 "
        "(Unauthorized)",
    ]
    await context.close()


async def test_another_namespace_sees_only_its_own(seeded: Seeded, browser: Browser) -> None:
    base = seeded.server.url
    context = await browser.new_context()
    page = await context.new_page()
    await sign_in(page, base, seeded.keys.other)
    assert await page.inner_text("#n-episodes") == "1"
    await page.goto(f"{base}/ui/episodes")
    text = await page.inner_text("main")
    assert f"{MARKER} description" in text
    assert "deploy the service" not in text
    await page.goto(f"{base}/ui/skills")
    assert "git.clone" not in await page.inner_text("main")
    await context.close()


async def test_sign_out_ends_the_session(seeded: Seeded, browser: Browser) -> None:
    base = seeded.server.url
    context = await browser.new_context()
    page = await context.new_page()
    await sign_in(page, base, seeded.keys.reader)
    assert await _cookie(context) is not None
    async with page.expect_navigation(url=f"{base}/ui/login"):
        await page.click("form.logout button")
    assert await _cookie(context) is None
    await page.goto(f"{base}/ui/recall")
    assert page.url == f"{base}/ui/login"
    await context.close()


async def test_another_sites_page_cannot_use_the_session(seeded: Seeded, browser: Browser) -> None:
    """A page of another site, open in the signed-in browser (allowed to call loopback
    services): the service refuses its script's reads of the dataset and its sign-in with
    the attacker's key, and a link from it arrives without the cookie."""
    base = seeded.server.url
    context = await browser.new_context()
    # Chromium asks the user before a page calls a loopback service; a user who allowed
    # it (or a browser that does not ask) leaves the service to defend itself.
    await context.grant_permissions(["local-network-access"])
    page = await context.new_page()
    await sign_in(page, base, seeded.keys.reader)
    signed_in = await _cookie(context)
    await page.route(
        f"{EVIL}/**", lambda route: route.fulfill(body="<p>hi</p>", content_type="text/html")
    )
    await page.goto(f"{EVIL}/")
    answers: list[tuple[str, str, int]] = []
    page.on(
        "response",
        lambda r: (
            answers.append((r.request.method, r.url.removeprefix(base), r.status))
            if r.url.startswith(base)
            else None
        ),
    )
    outcomes = await page.evaluate(
        """async ([base, key]) => {
            const attempt = async (url, init) => {
                try { const r = await fetch(url, init); return `read ${r.status}`; }
                catch (e) { return "blocked"; }
            };
            return [
                await attempt(base + "/ui/dataset/download", {credentials: "include"}),
                await attempt(base + "/ui/dataset/download", {credentials: "include",
                    mode: "no-cors"}),
                await attempt(base + "/ui/login", {method: "POST", credentials: "include",
                    headers: {"Content-Type": "application/json"}, body: JSON.stringify({key})}),
                await attempt(base + "/ui/login", {method: "POST", mode: "no-cors",
                    credentials: "include", headers: {"Content-Type": "text/plain"},
                    body: JSON.stringify({key})}),
            ];
        }""",
        [base, seeded.keys.other],
    )
    # Opaque answers ("read 0") are unreadable to the page; the service refused each one.
    assert outcomes == ["blocked", "read 0", "blocked", "read 0"]
    assert ("GET", "/ui/dataset/download", 403) in answers
    assert ("POST", "/ui/login", 403) in answers
    assert all(status == 403 for _, _, status in answers), answers
    assert await _cookie(context) == signed_in  # still the reader's own key
    # A link followed from that site arrives without the cookie: the sign-in page.
    async with page.expect_navigation(url=f"{base}/ui/login"):
        await page.evaluate("base => { window.location.href = base + '/ui'; }", base)
    await context.close()
