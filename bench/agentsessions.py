"""Claude Code sessions of the agent world: the task, the agent's plan, the events, the truth.

A session asks for a kind of work in a project; the agent plans from the context it was
handed, or guesses; `play` gives every hook event the session sends after its first
prompt, and the truth of each turn.

An agent that does a kind's key steps in order succeeds 90% of the time; one that leaves
one out or swaps two succeeds 10% of the time. A failure shows where it would: the first
check run after the broken step fails (a non-zero exit, or a failing summary piped through
`tail`), or, when no check comes after it, the user complains in the next prompt; now and
then it does not show at all. Around the steps are what agents really do: reading and
searching, `git status`, a wrong command corrected, a command nobody needed, a todo list,
an interrupted command, and next turns (thanks, a small follow-up, a complaint and a fix).
"""

from __future__ import annotations

import random
import uuid

from bench.agentcontext import follow, mentions
from bench.agenthooks import Played, Recorder, Task, Turn
from bench.agentinfra import INFRA
from bench.agentkinds import THANKS, Kind, Project, Slots, common_slots
from bench.agentshop import SHOP
from bench.agentwebapp import WEBAPP

PROJECTS = (SHOP, WEBAPP, INFRA)
PAIRS = [(p, k) for p in PROJECTS for k in p.kinds]
SUCCESS_RIGHT, SUCCESS_WRONG = 0.9, 0.1  # the odds of the right procedure, and of another
SWAP = 0.12  # an agent guessing the order swaps two neighbouring steps this often
FIX_IT = ("it fails, can you fix it?", "ok please fix that", "hm, can you sort that out")
DEFAULTS: Slots = {"prev": "1.3.0", "svc": "api", "pkg": "react-router-dom", "provider": "aws"}


def new_task(project: Project, kind: Kind, rng: random.Random, *, held_out: bool = False) -> Task:
    """A new session asking for `kind` in `project`, in words of training or held out."""
    slots = {**DEFAULTS, **common_slots(rng), **kind.slots(rng)}
    words = rng.choice(kind.held_out_prompts if held_out else kind.training_prompts)
    prompt = words.format_map(slots)
    if rng.random() < 0.15:
        prompt = rng.choice(["hey, ", "ok next: ", "morning! "]) + prompt
    session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return Task(project, kind, slots, prompt, session_id)


def right_order(kind: Kind, plan: list[int]) -> int | None:
    """The first key step (by index) missing or out of place in `plan`; None if none is."""
    keys = [i for i, s in enumerate(kind.steps) if s.key]
    done = [i for i in plan if kind.steps[i].key]
    for n, k in enumerate(keys):
        if n >= len(done) or done[n] != k:
            return k
    return None


def blind_plan(kind: Kind, rng: random.Random) -> list[int]:
    """An agent never shown the procedure: the steps it thinks of, roughly in order."""
    plan = [i for i, s in enumerate(kind.steps) if rng.random() < s.known]
    for j in range(len(plan) - 1):
        if rng.random() < SWAP:
            plan[j], plan[j + 1] = plan[j + 1], plan[j]
    return plan


def memory_plan(task: Task, context: str, rng: random.Random) -> tuple[list[int], int]:
    """The steps the context names, in its order, with what the agent guesses of the rest;
    and how many it took from the context (0: it acted as if it had none)."""
    sigs = task.step_signatures
    followed = follow(sigs, mentions(context, [s for ss in sigs for s in ss]))
    if not followed:
        return blind_plan(task.kind, rng), 0
    plan = list(followed)
    for i, step in enumerate(task.kind.steps):
        if i in followed or rng.random() >= step.known:
            continue
        at = next((n for n, j in enumerate(plan) if j > i), len(plan))
        plan.insert(rng.randint(0, len(plan)) if rng.random() < SWAP else at, i)
    return plan, len(followed)


def play(task: Task, plan: list[int], rng: random.Random) -> Played:
    """The session after its first prompt, the agent doing `plan` (indices of its kind's steps)."""
    s, steps = Recorder(task, rng), task.kind.steps
    broken = right_order(task.kind, plan)
    success = rng.random() < (SUCCESS_RIGHT if broken is None else SUCCESS_WRONG)
    failing, shows = None, "nothing"
    if not success:
        checks = [i for i in plan if steps[i].check and (broken is None or i > broken)]
        if checks:
            shows = rng.choices(["check", "complaint", "nothing"], [0.65, 0.25, 0.1])[0]
            failing = (checks[-1] if broken is None else checks[0]) if shows == "check" else None
        else:
            shows = rng.choices(["complaint", "nothing"], [0.75, 0.25])[0]
    s.out.turns.append(Turn(task.prompt, "task", success))
    for _ in range(rng.randint(1, 4)):
        s.look()
    if rng.random() < 0.25:
        s.todo(plan)
    interrupt = rng.random() < 0.06
    for i in plan:
        if rng.random() < 0.15:
            s.look()
        if rng.random() < 0.06:
            command, out = rng.choice(task.project.extras)
            s.bash(task.fill(command), out)
        step = steps[i]
        if step.wrong and rng.random() < 0.3:
            s.bash(task.fill(step.wrong), error=step.wrong_error)
        if interrupt and step.tool == "Bash" and not step.fails:
            s.interrupt(step)
            interrupt = False
        s.step(step, broken=i == failing)
        if i == failing:
            if rng.random() < 0.4:  # one more try that changes nothing
                s.look()
                s.step(step, broken=True)
            break
    s.send("Stop", stop_hook_active=False)
    s.out.success = s.out.final = success
    _next_turns(s, plan, shows)
    reason = rng.choices(["prompt_input_exit", "clear", "other"], [0.7, 0.15, 0.15])[0]
    s.send("SessionEnd", reason=reason)
    return s.out


def _next_turns(s: Recorder, plan: list[int], shows: str) -> None:
    rng, task, steps = s.rng, s.task, s.task.kind.steps
    r = rng.random()
    if (s.out.success and r < 0.35) or (shows == "nothing" and not s.out.success and r < 0.2):
        s.turn(rng.choice(THANKS), "thanks", None)
        s.send("Stop", stop_hook_active=False)
    elif s.out.success and r < 0.5:
        prompt, step = rng.choice(task.project.follow_ups)
        s.turn(prompt, "follow-up", True)
        s.step(step)
        s.send("Stop", stop_hook_active=False)
    elif shows == "complaint" or (shows == "check" and r < 0.5):
        prompts = task.kind.complaints if shows == "complaint" else FIX_IT
        fixed = rng.random() < 0.75
        s.turn(task.fill(rng.choice(prompts)), "fix", fixed)
        s.look()
        missing = [i for i, step in enumerate(steps) if step.key and i not in plan]
        last_check = max(i for i, step in enumerate(steps) if step.check)
        for i in sorted({*missing, last_check}):  # in the usual order, up to a check that fails
            s.step(steps[i], broken=not fixed and i == last_check)
            if not fixed and i == last_check:
                break
        s.send("Stop", stop_hook_active=False)
        s.out.final = fixed
        if fixed and rng.random() < 0.4:
            s.turn(rng.choice(THANKS), "thanks", None)
            s.send("Stop", stop_hook_active=False)
