"""Coding agents' sessions through the hooks: kinds of work from prompts, action signatures,
inferred outcomes, skills handed back as commands, per project, and no flood of memories."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests import hook_payloads as payloads

HOOK = "/v1/hooks/claude-code"
SHOP = "/home/dev/shop"
WEB = "/home/dev/webapp"


def _at(event: dict[str, Any], cwd: str) -> dict[str, Any]:
    return event | {"cwd": cwd}


def _bash(command: str, sid: str, cwd: str, *, stdout: str = "", fail: str | None = None) -> Any:
    if fail is not None:
        return _at(payloads.post_tool_use_failure("Bash", {"command": command}, fail, sid), cwd)
    response = {"stdout": stdout, "stderr": "", "interrupted": False}
    return _at(payloads.post_tool_use("Bash", {"command": command}, response, sid), cwd)


async def _turn(
    client: httpx.AsyncClient,
    prompt: str,
    calls: list[dict[str, Any]],
    *,
    sid: str,
    cwd: str,
    stop: bool = True,
) -> dict[str, Any]:
    r = await client.post(HOOK, json=_at(payloads.user_prompt_submit(prompt, sid), cwd))
    assert r.status_code == 200, r.text
    for call in calls:
        c = await client.post(HOOK, json=call)
        assert c.status_code == 200, c.text
    if stop:
        assert (await client.post(HOOK, json=_at(payloads.stop(sid), cwd))).status_code == 200
    answer: dict[str, Any] = r.json()
    return answer


async def _episodes(client: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    r = await client.get("/v1/episodes", params={"task_id": f"claude-code:{sid}"})
    items = list(reversed(r.json()["items"]))
    return [(await client.get(f"/v1/episodes/{e['id']}")).json() for e in items]


def _release(sid: str, version: str, *, cwd: str = SHOP, ok: bool = True) -> list[dict[str, Any]]:
    read = _at(
        payloads.post_tool_use("Read", {"file_path": f"{cwd}/CHANGELOG.md"}, "...", sid), cwd
    )
    edit = _at(
        payloads.post_tool_use(
            "Edit", {"file_path": f"{cwd}/pyproject.toml"}, {"filePath": "pyproject.toml"}, sid
        ),
        cwd,
    )
    tests = _bash(
        "uv run pytest -q tests/",
        sid,
        cwd,
        stdout="12 passed in 1.2s" if ok else "2 failed, 10 passed in 1.3s",
    )
    return [
        read,
        _bash("git status", sid, cwd),
        edit,
        tests,
        _bash(f'git commit -am "release {version}"', sid, cwd),
        _bash(f"git tag v{version}", sid, cwd),
        _bash("git push origin main --tags", sid, cwd),
    ]


async def test_a_turn_is_an_episode_of_its_kind_with_signatures_and_an_inferred_outcome(
    client: httpx.AsyncClient,
) -> None:
    sid = str(uuid.uuid4())
    await _turn(client, "cut release 1.4.2", _release(sid, "1.4.2"), sid=sid, cwd=SHOP)
    [episode] = await _episodes(client, sid)
    assert episode["task_type"] == "shop/release"
    assert episode["context"]["features"] == {"project": "shop"}
    signatures = [s["signature"] for s in episode["steps"]]
    assert signatures == [
        [],
        [],
        ["edit pyproject.toml"],
        ["uv run pytest -q <path>"],
        ["git commit -am <text>"],
        ["git tag <version>"],
        ["git push origin main --tags"],
    ]
    # The raw call stays in the step.
    assert episode["steps"][5]["input"] == {"command": "git tag v1.4.2"}
    assert (episode["outcome"], episode["outcome_source"]) == ("success", "inferred")
    assert episode["outcome_confidence"] >= 0.6
    assert "uv run pytest -q <path>" in episode["verdict"]


async def test_the_same_work_in_other_words_shares_the_kind_and_projects_do_not(
    client: httpx.AsyncClient,
) -> None:
    kinds = []
    for prompt, cwd in [
        ("cut release 1.4.2", SHOP),
        ("can you ship version 2.0.1?", SHOP),
        ("tag and publish the 2.1.0 release please", SHOP),
        ("release 3.0.0", WEB),
    ]:
        sid = str(uuid.uuid4())
        await _turn(client, prompt, [], sid=sid, cwd=cwd)
        kinds.append((await _episodes(client, sid))[0]["task_type"])
    assert kinds == ["shop/release", "shop/release", "shop/release", "webapp/release"]


async def test_a_task_type_given_by_a_wrapper_wins(client: httpx.AsyncClient) -> None:
    sid = str(uuid.uuid4())
    event = _at(payloads.user_prompt_submit("cut release 1.4.2", sid), SHOP)
    await client.post(HOOK, json=event | {"task_type": "release-train"})
    [episode] = await _episodes(client, sid)
    assert episode["task_type"] == "release-train"


async def test_a_failing_check_and_the_users_next_words_decide_the_outcome(
    client: httpx.AsyncClient,
) -> None:
    sid = str(uuid.uuid4())
    await _turn(client, "cut release 1.5.0", _release(sid, "1.5.0", ok=False), sid=sid, cwd=SHOP)
    await _turn(client, "cut release 1.5.1", _release(sid, "1.5.1"), sid=sid, cwd=SHOP)
    # The user's next words outweigh the passing tests of the turn before.
    await _turn(client, "that broke the build, look at CI", [], sid=sid, cwd=SHOP, stop=False)
    first, second, third = await _episodes(client, sid)
    assert (first["outcome"], first["outcome_source"]) == ("failure", "inferred")
    assert "failed" in first["steps"][3]["error"] or first["steps"][3]["status"] == "error"
    assert (second["outcome"], second["outcome_source"]) == ("failure", "inferred")
    assert "that broke the build" in second["verdict"]
    assert third["status"] == "open"


async def test_a_tasks_success_does_not_overwrite_the_turn_the_user_complained_of(
    client: httpx.AsyncClient,
) -> None:
    sid = str(uuid.uuid4())
    await _turn(client, "cut release 1.7.0", _release(sid, "1.7.0")[:-1], sid=sid, cwd=SHOP)
    push = [
        _bash("git push origin main --tags", sid, SHOP),
        _bash("uv run pytest -q tests/", sid, SHOP, stdout="12 passed in 1.2s"),
    ]
    await _turn(client, "the v1.7.0 tag isn't on github", push, sid=sid, cwd=SHOP)
    first, second = await _episodes(client, sid)
    assert (first["outcome"], second["outcome"]) == ("failure", "success")
    body = {"task_id": f"claude-code:{sid}", "signals": {"task_success": True}}
    r = await client.post("/v1/rewards", json=body)
    assert r.status_code in (200, 201), r.text
    scores = {e["episode_id"]: e for e in r.json()["episodes"]}
    # The task ended well, after the second turn put the first right: the first stays a
    # failure to learning (its score is its own), the second takes the task's success.
    assert scores[first["id"]]["components"]["outcome"] < 1.0
    assert scores[second["id"]]["components"]["outcome"] == 1.0


async def test_a_reported_outcome_wins_over_an_inference(client: httpx.AsyncClient) -> None:
    sid = str(uuid.uuid4())
    await _turn(client, "cut release 1.6.0", _release(sid, "1.6.0"), sid=sid, cwd=SHOP)
    [episode] = await _episodes(client, sid)
    r = await client.post(
        f"/v1/episodes/{episode['id']}/complete", json={"outcome": "failure", "verdict": "CI red"}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["outcome"], body["outcome_source"]) == ("failure", None)
    # Once reported, the user's next words do not change it.
    await _turn(client, "great, thanks!", [], sid=sid, cwd=SHOP, stop=False)
    assert (await _episodes(client, sid))[0]["outcome"] == "failure"
    # And a reported outcome is not reported over with another.
    again = await client.post(f"/v1/episodes/{episode['id']}/complete", json={"outcome": "success"})
    assert again.status_code == 409


async def _learn_release(client: httpx.AsyncClient) -> dict[str, Any]:
    """Fourteen release sessions in the shop; the skill learned from them."""
    asks = ["cut release {v}", "ship version {v}", "publish the {v} release", "release {v} please"]
    for i in range(14):
        sid = str(uuid.uuid4())
        version = f"1.{i}.0"
        # Half the sessions leave the tests out and fail at the push.
        calls = _release(sid, version)
        if i % 2 == 0:  # a habit: the linter before the tests, in every other session
            calls.insert(3, _bash("uv run ruff check app", sid, SHOP))
        if i % 3 == 2:
            calls = [c for c in calls if "pytest" not in str(c.get("tool_input"))][:-1] + [
                _bash("git push origin main --tags", sid, SHOP, fail="rejected: CI failed")
            ]
        await _turn(client, asks[i % 4].format(v=version), calls, sid=sid, cwd=SHOP)
    r = await client.post("/v1/reflect", json={"wait": True})
    assert r.status_code == 200, r.text
    skills = (await client.get("/v1/skills", params={"task_type": "shop/release"})).json()
    assert [s["status"] for s in skills["items"]] == ["active"], skills
    skill: dict[str, Any] = skills["items"][0]
    return skill


async def test_a_learned_skill_comes_back_as_commands_in_its_project_only(
    client: httpx.AsyncClient,
) -> None:
    skill = await _learn_release(client)
    sid = str(uuid.uuid4())
    answer = await _turn(client, "can you tag and ship 2.0.0?", [], sid=sid, cwd=SHOP, stop=False)
    text = answer["hookSpecificOutput"]["additionalContext"]
    wanted = [
        "uv run ruff check app (optional",
        "uv run pytest -q <path>",
        "git tag <version>",
        "git push origin main --tags",
    ]
    positions = [text.find(w) for w in wanted]
    assert all(p >= 0 for p in positions), text
    assert positions == sorted(positions)
    assert "project shop" in text
    # The habit is shown, in its place, and not required of the skill's followers.
    lint = {"action": "uv run ruff check app", "on_error": None, "optional": True}
    assert lint in skill["steps"]
    assert (
        skill["steps"].index(lint)
        == [s["action"] for s in skill["steps"]].index("uv run pytest -q <path>") - 1
    )
    # The turn's episode applied the skill it was handed: learning credits it with the turn.
    episode = (await _episodes(client, sid))[0]
    assert episode["skills_applied"] == [skill["id"]]

    other = str(uuid.uuid4())
    answer = await _turn(client, "cut release 3.0.0", [], sid=other, cwd=WEB, stop=False)
    text = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
    assert "git tag <version>" not in text


async def test_a_prompt_near_a_learned_kind_gets_its_skill_until_its_own_kind_learns(
    client: httpx.AsyncClient,
) -> None:
    skill = await _learn_release(client)
    # Too far from the releases to join their kind (a cover of 0.19, the threshold 0.3),
    # near enough to be answered with what they learned.
    # However often it is asked: its kind has learned nothing of its own yet.
    for n in range(4):
        sid = str(uuid.uuid4())
        ask = f"version 2.{n}.0 of the api"
        answer = await _turn(client, ask, [], sid=sid, cwd=SHOP, stop=False)
        assert "git tag <version>" in answer["hookSpecificOutput"]["additionalContext"]
        episode = (await _episodes(client, sid))[0]
        assert episode["task_type"] not in ("shop/release", None)
        assert episode["skills_applied"] == [skill["id"]]
    # Other work is answered with nothing of the releases, and so is another project.
    for prompt, cwd in [("add a column to the orders table", SHOP), ("version 2.1.0", WEB)]:
        other = str(uuid.uuid4())
        answer = await _turn(client, prompt, [], sid=other, cwd=cwd, stop=False)
        text = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
        assert "git tag <version>" not in text


async def test_a_task_is_one_use_of_a_skill_however_many_turns_it_took(
    client: httpx.AsyncClient,
) -> None:
    skill = await _learn_release(client)
    sid = str(uuid.uuid4())
    # Handed the skill, the agent's first turn fails its tests; the user asks for a fix,
    # is handed the skill again, and the second turn puts it right.
    first = await _turn(
        client, "cut release 4.0.0", _release(sid, "4.0.0", ok=False), sid=sid, cwd=SHOP
    )
    assert "git tag <version>" in first["hookSpecificOutput"]["additionalContext"]
    fix = [_bash("uv run pytest -q tests/", sid, SHOP, stdout="12 passed in 1.2s")]
    await _turn(client, "the release is broken, can you fix it?", fix, sid=sid, cwd=SHOP)
    await _turn(client, "great, thanks!", [], sid=sid, cwd=SHOP, stop=False)
    turns = await _episodes(client, sid)
    assert [t["skills_applied"] for t in turns[:2]] == [[skill["id"]]] * 2
    assert [t["outcome"] for t in turns[:2]] == ["failure", "success"]
    assert (await client.post("/v1/reflect", json={"wait": True})).status_code == 200
    after = (await client.get(f"/v1/skills/{skill['id']}")).json()
    # One use, judged by the turn that followed the skill: a failure. The fix is not a
    # second use, nor a success of the skill.
    assert after["uses"] == skill["uses"] + 1
    assert after["successes"] == skill["successes"]


async def test_turns_leave_one_memory_of_lessons_per_kind(client: httpx.AsyncClient) -> None:
    for i in range(6):
        sid = str(uuid.uuid4())
        calls = [
            _bash("uv run pytest -q", sid, SHOP, fail="ModuleNotFoundError: no module named x"),
            _bash("uv sync", sid, SHOP),
            _bash("uv run pytest -q", sid, SHOP, stdout="3 passed"),
        ]
        await _turn(client, f"fix the failing test number {i}", calls, sid=sid, cwd=SHOP)
    assert (await client.post("/v1/reflect", json={"wait": True})).status_code == 200
    memories = (await client.get("/v1/memories", params={"type": "reflection"})).json()["items"]
    assert len(memories) == 1
    assert "when `uv run pytest -q` fails, `uv sync` fixed it" in memories[0]["content"]


async def test_a_past_session_is_imported_once(client: httpx.AsyncClient) -> None:
    sid = str(uuid.uuid4())
    events = [
        {"kind": "start", "cwd": SHOP},
        {"kind": "prompt", "cwd": SHOP, "prompt": "cut release 1.4.2"},
        {"kind": "tool", "cwd": SHOP, "tool": "Bash", "input": {"command": "git tag v1.4.2"}},
        {"kind": "stop", "cwd": SHOP},
        {"kind": "prompt", "cwd": SHOP, "prompt": "thanks, now bump httpx"},
        {"kind": "tool", "cwd": SHOP, "tool": "Bash", "input": {"command": "uv add httpx"}},
    ]
    body = {"agent": "claude-code", "session_id": sid, "events": events}
    first = await client.post("/v1/agents/sessions", json=body)
    assert first.status_code == 201, first.text
    assert first.json() == {"session_id": sid, "imported": True, "episodes": 2, "steps": 2}
    again = await client.post("/v1/agents/sessions", json=body)
    assert again.status_code == 200
    assert again.json()["imported"] is False
    one, two = await _episodes(client, sid)
    assert (one["outcome"], one["outcome_source"]) == ("success", "inferred")
    assert two["status"] == "completed"
    # No recall was made for the past.
    transitions = (await client.get("/v1/rl/transitions")).json()["items"]
    assert transitions == []


async def test_a_session_import_is_checked(client: httpx.AsyncClient) -> None:
    bad = {"agent": "vim", "session_id": "s", "events": [{"kind": "stop"}]}
    r = await client.post("/v1/agents/sessions", json=bad)
    assert r.status_code == 422
    assert "agent" in r.text
    empty = {"agent": "codex", "session_id": "s", "events": []}
    assert (await client.post("/v1/agents/sessions", json=empty)).status_code == 422


async def test_cursor_and_codex_events_are_turns_and_bad_ones_are_named(
    client: httpx.AsyncClient,
) -> None:
    conversation = str(uuid.uuid4())
    base = {"conversation_id": conversation, "workspace_roots": [WEB]}
    prompt = base | {"hook_event_name": "beforeSubmitPrompt", "prompt": "release 2.0.0"}
    assert (await client.post("/v1/hooks/cursor", json=prompt)).json() == {"continue": True}
    shell = base | {"hook_event_name": "afterShellExecution", "command": "npm test"}
    assert (await client.post("/v1/hooks/cursor", json=shell)).status_code == 200
    stop = base | {"hook_event_name": "stop", "status": "completed"}
    assert (await client.post("/v1/hooks/cursor", json=stop)).status_code == 200
    r = await client.get("/v1/episodes", params={"task_id": f"cursor:{conversation}"})
    [episode] = r.json()["items"]
    assert (episode["task_type"], episode["step_count"]) == ("webapp/release", 1)

    notify = {
        "type": "agent-turn-complete",
        "thread-id": str(uuid.uuid4()),
        "turn-id": "1",
        "input-messages": ["cut release 3.0.0"],
        "last-assistant-message": "done",
    }
    assert (await client.post("/v1/hooks/codex", json=notify)).json() == {}

    too_long = prompt | {"conversation_id": "x" * 300}
    r = await client.post("/v1/hooks/cursor", json=too_long)
    assert (r.status_code, r.json()["field"]) == (422, "conversation_id")
    r = await client.post("/v1/hooks/codex", json={"type": "something-else"})
    assert (r.status_code, r.json()["field"]) == (422, "type")


async def test_a_complaint_of_the_turn_before_goes_on_with_its_kind(
    client: httpx.AsyncClient,
) -> None:
    # A fix-the-tests kind exists in the project: "it fails, can you fix it?" would be one.
    other = str(uuid.uuid4())
    await _turn(client, "the cart tests are failing, fix them", [], sid=other, cwd=SHOP)
    sid = str(uuid.uuid4())
    await _turn(client, "cut release 1.6.0", _release(sid, "1.6.0", ok=False), sid=sid, cwd=SHOP)
    await _turn(client, "it fails, can you fix it?", [], sid=sid, cwd=SHOP)
    await _turn(client, "pypi still shows 1.5.9, the release didn't go out", [], sid=sid, cwd=SHOP)
    # New work in the same session is its own kind.
    await _turn(client, "now fix the failing checkout tests", [], sid=sid, cwd=SHOP)
    kinds = [e["task_type"] for e in await _episodes(client, sid)]
    fix_tests = (await _episodes(client, other))[0]["task_type"]
    assert fix_tests != "shop/release"
    assert kinds == ["shop/release", "shop/release", "shop/release", fix_tests]


async def test_a_cursor_turn_the_user_stopped_and_waved_on_is_no_failure(
    client: httpx.AsyncClient,
) -> None:
    """Cursor's stop says `aborted` when the user stopped the agent: a failure, unless the
    next prompt asks it to go on."""
    outcomes = []
    for reply in ("continue", "no, that's wrong"):
        base = {"conversation_id": str(uuid.uuid4()), "workspace_roots": [WEB]}
        for event in (
            {"hook_event_name": "beforeSubmitPrompt", "prompt": "release 2.0.0"},
            {"hook_event_name": "afterShellExecution", "command": "npm run build"},
            {"hook_event_name": "stop", "status": "aborted"},
        ):
            assert (await client.post("/v1/hooks/cursor", json=base | event)).status_code == 200
        [stopped] = (
            await client.get(
                "/v1/episodes", params={"task_id": f"cursor:{base['conversation_id']}"}
            )
        ).json()["items"]
        assert stopped["outcome"] == "failure"
        prompt = {"hook_event_name": "beforeSubmitPrompt", "prompt": reply}
        assert (await client.post("/v1/hooks/cursor", json=base | prompt)).status_code == 200
        first = (await client.get(f"/v1/episodes/{stopped['id']}")).json()
        outcomes.append(first["outcome"])
    assert outcomes == ["unknown", "failure"]
