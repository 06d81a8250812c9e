"""Helpers for data scientists: turn rows of GET /v1/rl/dataset (table=transitions) into
episodes, and into a Minari dataset (`pip install 'engram-client[dataset]'`; Minari,
Gymnasium and NumPy are imported only by `to_minari`).

    from engram_client.transitions import to_minari

    rows = [json.loads(line) for line in open("transitions.ndjson")]
    dataset = to_minari(rows, "engram/recall-v0", slots=metadata["candidate_slots"])
"""

from __future__ import annotations

import warnings
from typing import Any


def episodes(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Transitions grouped into episodes: the recalls of one task, in order, ending at a
    termination. Recalls without a task are episodes of one step."""
    by_id = {r["transition_id"]: r for r in rows}
    has_previous = {r["next_transition_id"] for r in rows if r["next_transition_id"]}
    out: list[list[dict[str, Any]]] = []
    starts = [r for r in rows if r["transition_id"] not in has_previous]
    for start in starts:
        chain = [start]
        while chain[-1]["next_transition_id"] in by_id:
            chain.append(by_id[chain[-1]["next_transition_id"]])
        out.append(chain)
    return out


def to_minari(
    rows: list[dict[str, Any]],
    dataset_id: str,
    *,
    slots: int,
    code_permalink: str = "engram /v1/rl/dataset, schema_version 2",
    author: str = "engram",
    author_email: str = "engram@localhost",
) -> Any:
    """A Minari dataset of the rows' observations and actions (vectors of fixed length)."""
    import gymnasium as gym
    import minari
    import numpy as np
    from minari.data_collector import EpisodeBuffer

    dim = len(rows[0]["observations"])
    buffers = []
    for index, chain in enumerate(episodes(rows)):
        observations = [r["observations"] for r in chain]
        last = chain[-1]["next_observations"] or chain[-1]["observations"]
        observations.append(last)
        ended = bool(chain[-1]["terminations"])
        buffers.append(
            EpisodeBuffer(
                id=index,
                observations=np.asarray(observations, dtype=np.float32),
                actions=np.asarray([r["actions"] for r in chain], dtype=np.int8),
                rewards=[float(r["rewards"]) for r in chain],
                terminations=[False] * (len(chain) - 1) + [ended],
                truncations=[False] * (len(chain) - 1) + [not ended],
                # Minari's infos hold one entry per observation: NaN at the reset, then the
                # logging policy's propensity of each step's action.
                # (A column of shape (n, 1): Minari's Arrow storage reads 1-D infos back badly.)
                infos={
                    "pscore": np.asarray([np.nan] + [r["pscore"] for r in chain]).reshape(-1, 1)
                },
            )
        )
    with warnings.catch_warnings():
        # Minari asks for an environment to evaluate in; logged recalls have none.
        warnings.filterwarnings("ignore", message=".*env", category=UserWarning)
        return minari.create_dataset_from_buffers(
            dataset_id=dataset_id,
            buffer=buffers,
            observation_space=gym.spaces.Box(
                low=-np.inf, high=np.inf, shape=(dim,), dtype=np.float32
            ),
            action_space=gym.spaces.MultiBinary(slots),
            algorithm_name="engram baseline_v0 (epsilon-move exploration)",
            code_permalink=code_permalink,
            author=author,
            author_email=author_email,
            description="Engram recall decisions exported from /v1/rl/dataset",
            data_format="arrow",
        )
