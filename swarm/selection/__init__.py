"""Who survives a generation, and how proposal slots are shared among agents."""
from swarm.types import Candidate


def elites(history: list[Candidate], k: int) -> list[Candidate]:
    """The best ``k`` correct candidates, distinct params only, best first."""
    seen, out = set(), []
    for c in sorted((c for c in history if c.result and c.result.ok), key=lambda c: -c.score):
        key = tuple(sorted(c.params.items(), key=lambda kv: kv[0]))
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
        if len(out) == k:
            break
    return out
