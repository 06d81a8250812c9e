"""Search tokens (pure): the forms a word tokenizer would split kept as one index token,
the same on the memory's side and the query's, prefixes, and the curated expansions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.learning.ranking import query_terms
from app.learning.synonyms import EXPANSIONS
from app.learning.tokens import EXPANSION_WEIGHT, MAX_GROUPS, groups, scan, search_terms, token


def tokens_of(query: str) -> list[list[tuple[str, float]]]:
    return [list(g.tokens) for g in groups(query_terms(query))]


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("C++", "cplusplus"),
        ("C#", "csharp"),
        ("F#", "fsharp"),
        (".NET", "dotnet"),
        ("ASP.NET", "aspnet"),
        ("node.js", "nodejs"),
        ("src/app/main.py", "srcappmainpy"),
        ("ERR_MODULE_NOT_FOUND", "errmodulenotfound"),
        ("CVE-2024-3094", "cve20243094"),
        ("snake_case_name", "snakecasename"),
    ],
)
def test_a_form_is_one_token_on_both_sides(text: str, token: str) -> None:
    written = search_terms(f"We saw {text}, then moved on.")
    assert written is not None
    assert token in written.split()
    assert tokens_of(text)[0][0] == (token, 1.0)  # the query names the same token


def test_named_forms_are_searched_alone() -> None:
    # A word tokenizer makes "c" of all three; a one-letter word is not searched for.
    assert tokens_of("C++") == [[("cplusplus", 1.0), ("cpp", EXPANSION_WEIGHT)]]
    assert tokens_of("C#") == [[("csharp", 1.0)]]
    assert tokens_of("C") == []
    assert tokens_of(".NET") == [[("dotnet", 1.0)]]
    assert tokens_of("node.js") == [[("nodejs", 1.0)]]
    assert query_terms("Is C# or C++ faster on .NET?") == ["c#", "c++", "faster", ".net"]


def test_joined_forms_are_searched_with_their_words() -> None:
    assert query_terms("Where is src/app/main.py?") == ["src/app/main.py"]
    assert tokens_of("src/app/main.py")[0] == [("srcappmainpy", 1.0)]
    words = [g[0][0] for g in tokens_of("src/app/main.py")[1:]]
    assert words == ["src", "app", "main", "py"]
    # Stop words and single letters among the parts are left out, as in plain text.
    assert [g[0][0] for g in tokens_of("ERR_MODULE_NOT_FOUND")] == [
        "errmodulenotfound",
        "err",
        "module",
        "found",
    ]


def test_a_path_is_found_by_its_tails() -> None:
    written = search_terms("Edit src/app/main.py and lib\\util.c")
    assert written == "srcappmainpy appmainpy mainpy libutilc utilc"
    assert tokens_of("main.py")[0] == [("mainpy", 1.0)]


def test_ordinary_text_writes_nothing_and_queries_as_before() -> None:
    assert search_terms("Deploy the release to production on Monday.") is None
    assert search_terms("Pi is 3.14; e.g. the 2024-01-05 run") is None
    assert query_terms("How do we deploy the Deploy service?") == ["deploy", "service"]
    assert query_terms("Pi is 3.14") == ["pi", "14"]
    assert query_terms("ünïcödé café, naïve résumé") == ["ünïcödé", "café", "naïve", "résumé"]


def test_prefixes() -> None:
    assert query_terms("mig* plans") == ["mig*", "plans"]
    assert tokens_of("mig*") == [[("mig*", 1.0)]]
    # A bare star or a one-letter prefix would match much of the vocabulary: ignored.
    assert query_terms("* m* x") == []
    assert search_terms("mig* and *") is None


def test_synonyms_and_inflections_weigh_less_than_the_word() -> None:
    assert tokens_of("automobile")[0] == [
        ("automobile", 1.0),
        ("car", EXPANSION_WEIGHT),
        ("auto", EXPANSION_WEIGHT),
    ]
    assert ("kubernetes", EXPANSION_WEIGHT) in tokens_of("k8s")[0]
    assert ("k8s", EXPANSION_WEIGHT) in tokens_of("kubernetes")[0]
    assert ("database", EXPANSION_WEIGHT) in tokens_of("db")[0]
    assert ("javascript", EXPANSION_WEIGHT) in tokens_of("js")[0]
    assert ("run", EXPANSION_WEIGHT) in tokens_of("ran")[0]
    assert ("child", EXPANSION_WEIGHT) in tokens_of("children")[0]
    assert EXPANSION_WEIGHT < 1.0


def test_the_table_is_single_lowercase_words() -> None:
    for word, others in EXPANSIONS.items():
        for w in (word, *others):
            assert w == w.lower()
            assert tokens_of(w)[0][0] == (w, 1.0), w  # a word of the table is a plain word
        assert word not in others


def test_repeats_are_searched_once() -> None:
    assert len(tokens_of("src/app/main.py main app")) == 5
    assert query_terms("C++ c++ C++") == ["c++"]


def test_a_query_searches_a_bounded_number_of_tokens() -> None:
    one, two = ("/".join(f"{d}{i}" for i in range(40)) for d in "de")  # 40 parts each
    assert query_terms(f"{one} {two} deploy") == [one, two, "deploy"]
    assert len(groups(query_terms(f"{one} {two} deploy"))) == MAX_GROUPS


MARKED = st.text(alphabet="abcxyz019.+#_/\\-* \n\tÉé", max_size=60)


@settings(max_examples=400, deadline=None)
@given(MARKED)
def test_a_memory_holds_the_token_of_every_form_a_query_can_name(text: str) -> None:
    written = set((search_terms(text) or "").split())
    for kind, form_text in scan(text):
        if kind in ("whole", "joined"):
            assert token((kind, form_text)) in written
