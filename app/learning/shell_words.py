"""A shell line split into simple commands and their words (pure; never raises).

Commands are separated by `&&`, `||`, `;`, `;;`, `|`, `|&`, `&` and newlines. Quotes
are removed as the shell removes them; `$(...)`, `${...}`, backquotes and `<(...)` stay
inside their word as written. Redirections (`> f`, `2>&1`, `&>> log`, `<<< word`) are
dropped with their targets, and so are comments and subshell parentheses. A heredoc's
body is not read as commands: it is kept as the body of the command that opened it
(heredocs inside `$(...)` are skipped whole, as in `git commit -m "$(cat <<'EOF' ...)"`).
Leading `!`, `{`, `}` and the keywords `if then else elif do done fi while until esac` are
dropped from a command; `for`, `case`, `select` and `function` headers are dropped whole.
A line that does not parse (an unbalanced quote or bracket) is split at whitespace
instead, separators and redirections still honoured. Lines are cut at MAX_LINE chars.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_LINE = 10_000
_MAX_NESTING = 50  # deeper $( "$( ... )" ) nesting is read as unbalanced
_SEPARATORS = ("&&", "||", ";;", "|&", ";", "|", "&")
_REDIRECTS = ("<<<", "<<-", "&>>", ">>", "<<", "<>", ">&", "<&", ">|", "&>", ">", "<")
_LEADING = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "do", "done", "fi", "while", "until", "esac"}
)
_HEADERS = frozenset({"for", "case", "select", "function"})
_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)([^\s'\"();&|<>]+)\1")
_FALLBACK_REDIRECT = re.compile(r"^(\d*|&)(>>?|<<?<?|>&|<&|>\|)")


@dataclass
class Simple:
    """One simple command: its words, and the body of the heredoc it opened, if any."""

    words: list[str] = field(default_factory=list)
    body: str | None = None


class _Unbalanced(ValueError):
    pass


def simple_commands(line: str) -> list[Simple]:
    """The simple commands of a shell line, in order (see the module docstring)."""
    line = line[:MAX_LINE]
    try:
        commands = _parse(line)
    except _Unbalanced:
        commands = _fallback(line)
    out = []
    for command in commands:
        words = _grammar_dropped(command.words)
        if words or command.body is not None:
            out.append(Simple(words, command.body))
    return out


def _grammar_dropped(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) and words[i] in _LEADING:
        i += 1
    if i < len(words) and words[i] in _HEADERS:
        return []
    return words[i:]


def _parse(s: str) -> list[Simple]:
    commands: list[Simple] = []
    current = Simple()
    buf: list[str] = []
    started = quoted = False
    drop_next = want_delim = False
    heredocs: list[tuple[str, Simple]] = []
    n, i = len(s), 0

    def end_word() -> None:
        nonlocal buf, started, quoted, drop_next, want_delim
        if started:
            word = "".join(buf)
            if want_delim:
                heredocs.append((word, current))
                want_delim = False
            elif drop_next:
                drop_next = False
            else:
                current.words.append(word)
        buf, started, quoted = [], False, False

    def end_command() -> None:
        nonlocal current, drop_next
        end_word()
        drop_next = False
        commands.append(current)
        current = Simple()

    while i < n:
        c = s[i]
        if c == "\\":
            if s.startswith("\n", i + 1):  # a line continuation
                i += 2
                continue
            buf.append(s[i + 1 : i + 2])
            started, quoted, i = True, True, i + 2
        elif c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                raise _Unbalanced
            buf.append(s[i + 1 : j])
            started, quoted, i = True, True, j + 1
        elif c == '"':
            text, i = _double(s, i + 1, 0)
            buf.append(text)
            started = quoted = True
        elif c == "$" and s.startswith(("$(", "${"), i):
            j = _skip_nested(s, i + 1, 0)
            buf.append(s[i:j])
            started, i = True, j
        elif c == "`":
            j = _backquote_end(s, i)
            buf.append(s[i:j])
            started, i = True, j
        elif c in "<>" and s.startswith("(", i + 1):  # process substitution: a word
            j = _skip_nested(s, i + 1, 0)
            buf.append(s[i:j])
            started, i = True, j
        elif c in " \t\r":
            end_word()
            i += 1
        elif c == "\n":
            end_command()
            i = _bodies(s, i + 1, heredocs)
        elif c == "#" and not started:
            j = s.find("\n", i)
            i = n if j < 0 else j
        elif c in "()":
            end_command()
            i += 1
        else:
            op = _operator(s, i)
            if op is None:
                buf.append(c)
                started, i = True, i + 1
            elif op in _SEPARATORS:
                end_command()
                i += len(op)
            else:
                if started and not quoted and "".join(buf).isdigit():
                    buf, started = [], False  # the descriptor of `2>`: part of the redirection
                end_word()
                want_delim = op in ("<<", "<<-")
                drop_next = not want_delim
                i += len(op)
    end_command()
    return [c for c in commands if c.words or c.body is not None]


def _operator(s: str, i: int) -> str | None:
    if s[i] not in "&|;<>":
        return None
    if s.startswith("&&", i):
        return "&&"
    for op in (*_REDIRECTS, *_SEPARATORS):
        if s.startswith(op, i):
            return op
    return None


def _bodies(s: str, i: int, heredocs: list[tuple[str, Simple]]) -> int:
    """Skips the bodies of the heredocs opened on the line just ended, keeping each."""
    for delimiter, command in heredocs:
        lines = []
        while i < len(s):
            j = s.find("\n", i)
            j = len(s) if j < 0 else j
            line, i = s[i:j], j + 1
            if line.strip() == delimiter:
                break
            lines.append(line)
        command.body = "\n".join(lines)
    heredocs.clear()
    return min(i, len(s))


def _double(s: str, i: int, depth: int) -> tuple[str, int]:
    """The text of a double-quoted string starting at s[i], and the index past its end."""
    out: list[str] = []
    while i < len(s):
        c = s[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            out.append(nxt if nxt in '"\\$`\n' else c + nxt)
            i += 2
        elif c == "$" and s.startswith(("$(", "${"), i):
            j = _skip_nested(s, i + 1, depth + 1)
            out.append(s[i:j])
            i = j
        elif c == "`":
            j = _backquote_end(s, i)
            out.append(s[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    raise _Unbalanced


def _backquote_end(s: str, i: int) -> int:
    j = i + 1
    while j < len(s):
        if s[j] == "\\":
            j += 2
        elif s[j] == "`":
            return j + 1
        else:
            j += 1
    raise _Unbalanced


def _skip_nested(s: str, i: int, depth: int) -> int:
    """The index past the bracket that closes s[i] (`(` or `{`), skipping quoted text
    and heredoc bodies, so `$(cat <<'EOF' ... don't ... EOF)` is one word."""
    if depth > _MAX_NESTING:
        raise _Unbalanced
    closers = {"(": ")", "{": "}"}
    stack = [closers[s[i]]]
    pending: list[str] = []
    i += 1
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
        elif c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                raise _Unbalanced
            i = j + 1
        elif c == '"':
            i = _double(s, i + 1, depth + 1)[1]
        elif c == "`":
            i = _backquote_end(s, i)
        elif c == "<" and (m := _HEREDOC.match(s, i)) and not s.startswith("<<<", i):
            pending.append(m.group(2))
            i = m.end()
        elif c == "\n" and pending:
            i = _bodies(s, i + 1, [(p, Simple()) for p in pending])
            pending.clear()
        else:
            if c in closers:
                stack.append(closers[c])
            elif c == stack[-1]:
                stack.pop()
                if not stack:
                    return i + 1
            i += 1
    raise _Unbalanced


def _fallback(s: str) -> list[Simple]:
    commands: list[Simple] = []
    for line in s.splitlines():
        words: list[str] = []
        drop_next = False
        for token in line.split():
            if token in _SEPARATORS:
                commands.append(Simple(words))
                words = []
            elif drop_next:
                drop_next = False
            elif m := _FALLBACK_REDIRECT.match(token):
                drop_next = m.end() == len(token)  # `> file`: the target is the next word
            else:
                words.append(token)
        commands.append(Simple(words))
    return [c for c in commands if c.words]
