"""The curated table of query-time expansions: synonyms and abbreviations, and irregular
inflections the stemmer cannot join ("ran" is not "run" to Porter). Each line is a group
of interchangeable words; a query word is expanded to the other words of its groups,
which weigh less than the word itself (`tokens.EXPANSION_WEIGHT`). Single words only,
lower case, as the index tokenizes them ("C#" is "csharp", "node.js" is "nodejs")."""

from __future__ import annotations

SYNONYMS = """
automobile car auto
vehicle car
kubernetes k8s kube
database db
javascript js ecmascript
typescript ts
postgresql postgres psql
golang go
repository repo
configuration config
environment env
authentication authn
authorization authz
application app
documentation docs
directory dir folder
dependency dependencies deps
production prod
development dev
message msg
password passwd pwd
identifier id
parameter param
argument arg
function func fn
library lib
temporary temp tmp
specification spec
administrator admin
cplusplus cpp
photo picture image
movie film
doctor physician
job occupation
buy purchase
start begin
error failure
bug defect
fix repair
big large
small little
fast quick
"""

INFLECTIONS = """
run ran
go went gone
buy bought
bring brought
think thought
teach taught
catch caught
fight fought
seek sought
make made
take took taken
give gave given
eat ate eaten
write wrote written
drive drove driven
ride rode ridden
speak spoke spoken
break broke broken
choose chose chosen
forget forgot forgotten
begin began begun
swim swam swum
sing sang sung
drink drank drunk
know knew known
grow grew grown
fly flew flown
throw threw thrown
draw drew drawn
wear wore worn
tell told
sell sold
pay paid
say said
feel felt
keep kept
sleep slept
meet met
send sent
spend spent
build built
lose lost
sit sat
stand stood
understand understood
hold held
win won
get got gotten
come came
become became
fall fell fallen
hide hid hidden
bite bit bitten
lead led
feed fed
child children
man men
woman women
person people
mouse mice
foot feet
tooth teeth
goose geese
ox oxen
datum data
index indices
matrix matrices
vertex vertices
criterion criteria
analysis analyses
thesis theses
crisis crises
"""


def _groups() -> dict[str, tuple[str, ...]]:
    """Each word -> the other words of every group it is in, in table order."""
    others: dict[str, dict[str, None]] = {}
    for line in (SYNONYMS + INFLECTIONS).splitlines():
        words = line.split()
        for word in words:
            seen = others.setdefault(word, {})
            for other in words:
                if other != word:
                    seen.setdefault(other, None)
    return {word: tuple(rest) for word, rest in others.items() if rest}


EXPANSIONS = _groups()
