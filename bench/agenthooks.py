"""Claude Code's hook payloads for the agent world: a session's task and its tool calls.

Bash, Read, Edit, Grep, Glob and TodoWrite calls are sent as PostToolUse (or
PostToolUseFailure) events with each tool's input and response in Claude Code's shapes.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from bench.agentcontext import signatures_of
from bench.agentkinds import CARRY_ON, INTERRUPTED, Kind, Project, Slots, Step


@dataclass(slots=True)
class Turn:
    prompt: str
    kind: str  # task, fix, follow-up, thanks
    truth: bool | None  # None: nothing was asked that can succeed or fail


@dataclass
class Task:
    project: Project
    kind: Kind
    slots: Slots
    prompt: str
    session_id: str

    def fill(self, template: str) -> str:
        return template.format_map(self.slots)

    def tool_input(self, step: Step) -> dict[str, Any]:
        if step.tool == "Bash":
            command = self.fill(step.text)
            return {"command": command, "description": "Run " + " ".join(command.split()[:3])}
        return {
            "file_path": f"{self.project.cwd}/{self.fill(step.text)}",
            "old_string": self.fill(step.old),
            "new_string": self.fill(step.ok),
            "replace_all": False,
        }

    @cached_property
    def step_signatures(self) -> list[list[str]]:
        """Each step's signatures in this session, as the server would compute them."""
        cwd = self.project.cwd
        return [signatures_of(s.tool, self.tool_input(s), cwd=cwd) for s in self.kind.steps]

    def event(self, name: str, **fields: Any) -> dict[str, Any]:
        """A hook payload of this session, as Claude Code sends it."""
        folder = self.project.cwd.replace("/", "-")
        return {
            "session_id": self.session_id,
            "transcript_path": f"/home/dev/.claude/projects/{folder}/{self.session_id}.jsonl",
            "cwd": self.project.cwd,
            "permission_mode": "acceptEdits" if self.session_id[0] in "0123" else "default",
            "hook_event_name": name,
            **fields,
        }


@dataclass
class Played:
    events: list[dict[str, Any]] = field(default_factory=list)  # after the first prompt
    turns: list[Turn] = field(default_factory=list)
    success: bool = False  # the task's own turn
    final: bool = False  # after a fix, if any: what a reward says


class Recorder:
    """A session's events after its first prompt, one tool call or turn at a time."""

    def __init__(self, task: Task, rng: random.Random) -> None:
        self.task, self.rng, self.p = task, rng, task.project
        self.out = Played()
        self.read: set[str] = set()

    def send(self, name: str, **fields: Any) -> None:
        self.out.events.append(self.task.event(name, **fields))

    def tool(
        self, tool: str, tool_input: dict[str, Any], response: Any = None, **failed: Any
    ) -> None:
        tool_use_id = "toolu_01" + "".join(
            self.rng.choices(string.ascii_letters + string.digits, k=22)
        )
        common = {"tool_name": tool, "tool_input": tool_input, "tool_use_id": tool_use_id}
        if failed:
            self.send("PostToolUseFailure", **common, **{"is_interrupt": False, **failed})
        else:
            self.send("PostToolUse", **common, tool_response=response)

    def bash(self, command: str, out: str = "", *, error: str | None = None) -> None:
        tool_input = {"command": command, "description": "Run " + " ".join(command.split()[:3])}
        if error is not None:
            self.tool("Bash", tool_input, error=self.task.fill(error))
            return
        text = self.task.fill(out)
        pushed = command.startswith("git push")  # git writes its progress to stderr
        response = {"stdout": "" if pushed else text, "stderr": text if pushed else "",
                    "interrupted": False, "isImage": False}  # fmt: skip
        self.tool("Bash", tool_input, response)

    def read_file(self, relative: str, old: str = "") -> None:
        path = f"{self.p.cwd}/{relative}"
        content = self.task.fill(self.p.files[relative]) if relative in self.p.files else (
            f'"""{relative}"""\n\n# ...\n{old}\n# ...\n')  # fmt: skip
        lines = content.count("\n") + 1
        file = {
            "filePath": path,
            "content": content,
            "numLines": lines,
            "startLine": 1,
            "totalLines": lines,
        }
        self.tool("Read", {"file_path": path}, {"type": "text", "file": file})
        self.read.add(relative)

    def look(self) -> None:
        what = self.rng.random()
        if what < 0.3:
            self.read_file(self.rng.choice(sorted(self.p.files)))
        elif what < 0.5:
            pattern, files = self.rng.choice(self.p.greps)
            found = {"mode": "files_with_matches", "filenames": list(files), "numFiles": len(files)}
            self.tool("Grep", {"pattern": pattern, "output_mode": "files_with_matches"}, found)
        elif what < 0.65:
            pattern, files = self.rng.choice(self.p.globs)
            paths = [f"{self.p.cwd}/{f}" for f in files]
            found = {"filenames": paths, "durationMs": self.rng.randint(3, 60), "numFiles": len(paths),
                     "truncated": False}  # fmt: skip
            self.tool("Glob", {"pattern": pattern}, found)
        else:
            command, out = self.rng.choice(self.p.looks)
            self.bash(self.task.fill(command), out)

    def todo(self, plan: list[int]) -> None:
        steps = self.task.kind.steps
        todos = [{"content": f"Run {self.task.fill(steps[i].text)}" if steps[i].tool == "Bash"
                  else f"Update {self.task.fill(steps[i].text)}", "status": "pending",
                  "activeForm": "Working on it"} for i in plan]  # fmt: skip
        self.tool("TodoWrite", {"todos": todos}, {"oldTodos": [], "newTodos": todos})

    def step(self, step: Step, *, broken: bool = False) -> None:
        fill, tool_input = self.task.fill, self.task.tool_input(step)
        if step.tool == "Edit":
            relative = fill(step.text)
            if relative not in self.read:
                self.read_file(relative, fill(step.old))
            old, new = tool_input["old_string"], tool_input["new_string"]
            patch = [{"oldStart": 3, "oldLines": 1, "newStart": 3, "newLines": new.count("\n") + 1,
                      "lines": [f"-{old}", *(f"+{line}" for line in new.split("\n"))]}]  # fmt: skip
            response = {"filePath": tool_input["file_path"], "oldString": old, "newString": new,
                        "originalFile": f"# ...\n{old}\n# ...\n", "structuredPatch": patch,
                        "userModified": False, "replaceAll": False}  # fmt: skip
            self.tool("Edit", tool_input, response)
            return
        command, text = tool_input["command"], step.fail if broken else step.ok
        if step.check and self.rng.random() < 0.25:  # piped: tail's exit status, 0
            self.bash(command + " 2>&1 | tail -20", text)
        elif broken or step.fails:
            self.bash(command, error=f"Exit code 1\n{text}")
        else:
            self.bash(command, text)

    def interrupt(self, step: Step) -> None:
        tool_input = self.task.tool_input(step)
        self.tool("Bash", tool_input, error=INTERRUPTED, is_interrupt=True)
        self.send("UserPromptSubmit", prompt=self.rng.choice(CARRY_ON))  # the same turn goes on

    def turn(self, prompt: str, kind: str, truth: bool | None) -> None:
        self.send("UserPromptSubmit", prompt=prompt)
        self.out.turns.append(Turn(prompt, kind, truth))
