"""One simple command's words made canonical: literal head, flags, abstracted values (pure).

Used by signatures.py, whose docstring states the rules; this module applies them to one
command's words (already split by shell_words.py) and matches command patterns.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from app.learning.signature_rules import ALL, Pattern, Rules

PLACEHOLDER = re.compile(r"<(?:version|n|url|path|text|name)>")
ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|[\w.-]+@[\w.-]+:")
# A requirement with a version constraint names a package: `requests==2.31.0`, `django>=4.2,<5`.
# A scoped npm package, with a version or not (`@tanstack/react-query@5.1.0`): not a path.
_SCOPED = re.compile(r"@[a-z0-9][\w.-]*/[a-z0-9][\w.-]*(@\S+)?", re.IGNORECASE)
_PIN = re.compile(r"[A-Za-z0-9_.\-\[\],]+\s*(?:===|==|>=|<=|~=|!=|<|>)")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)=(?!=)(.*)", re.S)
# Possessive quantifiers: no backtracking, whatever the word.
_VERSION = re.compile(
    r"v\d++|v?\d++(?:\.\d++)++(?:[-+.][0-9A-Za-z.+-]++|[a-zA-Z][0-9A-Za-z.+-]*+)?"
)
_NUMBER = re.compile(r"\d+")
_WORD = re.compile(r"[a-z][a-z-]*")


@dataclass
class Scan:
    """A command's canonical words, with the parts that patterns are matched on."""

    words: list[str]  # canonical, in order
    key: list[str] = field(default_factory=list)  # program (basename) and literal words
    flags: list[str] = field(default_factory=list)  # canonical flags
    args: list[str] = field(default_factory=list)  # other positional words, abstracted
    rest: list[str] | None = None  # after a wrapper: the raw words of the wrapped command


def is_plain_word(word: str) -> bool:
    """A plain lowercase word (letters and hyphens): kept literally, like `main`, `prod`."""
    return _WORD.fullmatch(word) is not None


def is_flag(word: str) -> bool:
    return word.startswith("-") or (len(word) > 1 and word[0] == "+")


def classify(word: str, rules: Rules, *, assignment: bool = True, named_key: bool = False) -> str:
    """A positional word's class, or the word itself when it is a plain lowercase word;
    `named_key`: an assignment's name is a value too (`<name>=<path>`)."""
    if PLACEHOLDER.fullmatch(word):
        return word  # already canonical: signatures read again (verification) keep theirs
    if not word:
        return "<text>"
    if _URL.match(word):
        return "<url>"
    if assignment and (m := _ASSIGN.fullmatch(word)):
        # A variable's value is a value, plain word or not (`SERVICE=billing`).
        value = m[2]
        inner = classify(value, rules, assignment=False) if value else ""
        key = "<name>" if named_key else m[1]
        return f"{key}={'<name>' if value and inner == value else inner}"
    if any(c.isspace() for c in word):
        return "<text>"
    if _PIN.match(word) or _SCOPED.fullmatch(word):
        return "<name>"
    if _VERSION.fullmatch(word) and not _has_extension(word, rules):
        return "<version>"
    if _NUMBER.fullmatch(word):
        # Seven digits and more: an id or a short commit hash that has no letter in it.
        return "<n>" if len(word) < 7 else "<name>"
    if is_path(word, rules):
        return "<path>"
    if not any(c.isalnum() for c in word):
        return "<text>"  # punctuation, like an ellipsis standing for a body
    return word if is_plain_word(word) else "<name>"


def is_path(word: str, rules: Rules) -> bool:
    if "/" in word or "*" in word or word in (".", "..") or word.startswith("~"):
        return True
    if word.startswith(".") and (word[1:2].isalnum() or word[1:2] in "_["):
        return True  # a dotfile (.env, .github) or the project itself with extras (.[dev])
    return _has_extension(word, rules)


def _has_extension(word: str, rules: Rules) -> bool:
    stem, dot, extension = word.rpartition(".")
    return bool(dot and stem and extension.lower() in rules.path_extensions)


def flag(word: str, rules: Rules) -> str:
    """A flag as written; the value of `--flag=value` abstracted (a plain word stays)."""
    name, eq, value = word.partition("=")
    if any(c.isspace() for c in name):
        return "<text>"  # a quoted phrase that starts with a dash
    if not eq or not value:
        return word
    return f"{name}={classify(value, rules, assignment=False)}"


def program(word: str, rules: Rules) -> str:
    """The program as written in a signature: an installed program's basename, a
    project script's relative path (`./scripts/release.sh`, `bin/rails`)."""
    if not word or any(c.isspace() for c in word):
        return "<text>"
    if "/" not in word:
        return word
    base = posixpath.basename(word)
    if not base:
        return word
    if word.startswith(("/", "~")):
        return base
    parts = [p for p in word.split("/") if p not in ("", ".")]
    if len(parts) >= 3 and parts[-2] in rules.install_dirs:
        return base
    return word


def table_name(prog: str) -> str:
    """The name a program has in the rules: its basename (`bin/rails` is rails)."""
    return (posixpath.basename(prog) or prog) if "/" in prog else prog


def value_flags(key: list[str], rules: Rules) -> frozenset[str]:
    """The value flags of the longest prefix of `key` that has some."""
    for end in range(len(key), 0, -1):
        found = rules.value_flags.get(" ".join(key[:end]))
        if found is not None:
            return found
    return frozenset()


def scan(words: list[str], rules: Rules) -> Scan:
    """The canonical form of one simple command (words[0] its program); for a wrapper,
    the wrapper's part, with the wrapped command's raw words in `rest`."""
    prog = program(words[0], rules)
    out = Scan([prog], [table_name(prog)])
    count = rules.literal_words.get(out.key[0], 0)
    if (out.key[0],) in rules.wrappers or (out.key[0],) in rules.named_wrappers:
        return _wrapped(out, words, 1, rules)
    i = 1
    while i < len(words):
        word = words[i]
        joined = (*out.key, word)
        if not out.args and (joined in rules.wrappers or joined in rules.named_wrappers):
            out.key.append(word)
            out.words.append(word)
            return _wrapped(out, words, i + 1, rules)
        if is_flag(word):
            out.words.append(flag(word, rules))
            out.flags.append(out.words[-1])
            if "=" not in word and i + 1 < len(words) and word in value_flags(out.key, rules):
                out.words.append(classify(words[i + 1], rules))
                i += 1
        elif _literal(word, out, count, rules):
            out.key.append(word)
            out.words.append(word)
            if count != ALL:
                count = rules.literal_words.get(" ".join(out.key), count)
        else:
            out.words.append(classify(word, rules, named_key=tuple(out.key) in rules.named_keys))
            out.args.append(out.words[-1])
        i += 1
    return out


def _literal(word: str, out: Scan, count: int, rules: Rules) -> bool:
    if not word or any(c.isspace() for c in word) or _ASSIGN.fullmatch(word):
        return False
    if PLACEHOLDER.fullmatch(word):
        return False
    if count == ALL:
        return True
    if out.args:
        return False  # literal words come first
    return len(out.key) - 1 < count or " ".join((*out.key, word)) in rules.literal_words


def _wrapped(out: Scan, words: list[str], i: int, rules: Rules) -> Scan:
    named = tuple(out.key) in rules.named_wrappers
    flags = value_flags(out.key, rules)
    while i < len(words) and is_flag(words[i]):
        word = words[i]
        out.words.append(flag(word, rules))
        i += 1
        if word == "--":
            break
        if "=" not in word and word in flags and i < len(words):
            out.words.append(classify(words[i], rules))
            i += 1
    if named and i < len(words):
        out.words.append(words[i] if is_plain_word(words[i]) else "<name>")
        i += 1
        if i < len(words) and words[i] == "--":
            out.words.append("--")
            i += 1
    out.rest = words[i:]
    return out


def strip_prefixes(words: list[str], rules: Rules) -> list[str] | None:
    """The words without leading VAR=value and prefixes; None if a prefix's own form is
    exploration (`command -v uv`)."""
    looked_up = {p.words[0] for p in rules.exploration_commands if p.words}
    i = 0
    while i < len(words):
        if ENV_ASSIGNMENT.match(words[i]):
            i += 1
            continue
        name = table_name(program(words[i], rules))
        if name not in rules.prefixes:
            break
        if name in looked_up and exploring(scan(words[i : i + 8], rules), rules):
            return None
        flags = rules.value_flags.get(name, frozenset())
        positionals = rules.prefix_positionals.get(name, 0)
        i += 1
        while i < len(words):
            word = words[i]
            if is_flag(word):
                i += 2 if word in flags else 1
            elif ENV_ASSIGNMENT.match(word):
                i += 1
            elif positionals:
                positionals -= 1
                i += 1
            else:
                break
    return words[i:]


def matches(pattern: Pattern, command: Scan) -> bool:
    positional = [*command.key, *command.args]
    if len(positional) < len(pattern.words):
        return False
    if pattern.exact and len(positional) != len(pattern.words):
        return False
    words = iter(pattern.words)
    first = next(words, None)
    if first is not None and not (
        fnmatchcase(positional[0], first) or fnmatchcase(command.words[0], first)
    ):
        return False  # the program by its name in the rules, or as written (./deploy.sh)
    if not all(fnmatchcase(w, g) for w, g in zip(positional[1:], words, strict=False)):
        return False
    return all(any(fnmatchcase(f, g) for f in command.flags) for g in pattern.flags)


def exploring(command: Scan, rules: Rules) -> bool:
    """Whether a command only reads, searches, lists or prints."""
    name = command.key[0]
    if name in rules.exploration_programs:
        unless = rules.exploration_unless.get(name, ())
        if not any(fnmatchcase(f, g) for f in command.flags for g in unless):
            return True
    return any(matches(p, command) for p in rules.exploration_commands)
