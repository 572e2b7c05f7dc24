"""Lessons by fusion-group signature: what one problem's search learnt about a group serves
every later problem that contains a group of the same kind.

An imported workload (own ops, engine phases) is one generated program whose knobs are its
groups' knobs (``G<id>_<NAME>``) and its fusion bits. Its run's lessons are about the whole
program; here they are also *projected* onto each group that ran in the best kernels: the
group's own knobs, prefix stripped, stored under the group's **signature key** — its family
and structure (ops, reductions, layout, epilogue), not its sizes — with the group's sizes as
the shape bucket and this host's fingerprint, like any lesson. ``"row reduction softmax,
cols 2^11, cpu X"`` is one such key and bucket.

A later run on another problem asks, for each of its groups, for the lessons under that
group's key (the nearest sizes first), and for a group that matches a built-in workload
(``signature.matches``: a row softmax, an RMSNorm, a plain matmul) for that workload's own
tuned knowledge too: its best-config lessons and its library champions, at the group's
sizes in that workload's dims. Each group's remembered knobs, prefixed with the group's id,
are composed into whole-program configs over the new problem's space (defaults elsewhere,
every composed point checked against the space's constraints), handed to the swarm as
``best_config`` lessons that the ``seeded`` agent starts from. Nothing here is a measurement:
a composed config is only a starting point, judged like any other candidate.
"""
from __future__ import annotations

import math

# the summaries' vocabulary lives beside the generator (the engine breakdown reads it too)
from kernels.codegen.signature import active, describe, group_shape, prefix, signature_key, sizes
from kernels.spec import Shape
from swarm.knowledge import shape_bucket
from swarm.types import Lesson

# A built-in workload's param value → a generated group's knob where their names differ.
TRANSLATE = {
    "softmax": {"ALGO": ("STAGE", {"staged": 1, "two_pass": 0})},
}
RANKS = 3


def builtin_shape(name: str, summary: dict) -> Shape | None:
    """A matched group's sizes in the built-in workload's own dims."""
    if name == "matmul":
        return Shape.of(m=summary["m"], n=summary["n"], k=summary["k"])
    shape = summary.get("shape") or []
    if name in ("softmax", "rmsnorm", "layernorm") and shape:
        return Shape.of(rows=math.prod(shape[:-1]), cols=shape[-1])
    return None


# --------------------------------------------------------------------------- learning

def project(groups: list[dict], lessons: list[Lesson]) -> list[Lesson]:
    """A run's whole-program lessons → lessons under each group's signature key."""
    out = []
    for lsn in lessons:
        if lsn.kind == "best_config":
            params = lsn.data.get("params") or {}
            for g in active(groups, params):
                own = _strip(g, params)
                if not own:
                    continue
                out.append(_group_lesson(lsn, g, own, text=(
                    f"{describe(g['signature'])} at {sizes(g['signature'])}: {_fmt(own)} in the "
                    f"{lsn.data.get('subject', 'best')} kernel of {lsn.workload} "
                    f"({float(lsn.data.get('score', 0.0)):.2f}x for the whole problem)"),
                    data={"subject": lsn.data.get("subject", ""), "params": own,
                          "score": lsn.data.get("score", 0.0), "from": lsn.workload}))
        elif lsn.kind == "param_effect":
            name = lsn.data.get("param", "")
            for g in groups:
                p = prefix(g)
                if name.startswith(p) and name[len(p):] and name in g.get("knobs", []):
                    knob = name[len(p):]
                    out.append(_group_lesson(lsn, g, {}, text=(
                        f"{describe(g['signature'])}: {knob}={lsn.data.get('best')} pays off "
                        f"(learnt on {lsn.workload})"),
                        data={"subject": knob, "param": knob, "best": lsn.data.get("best"),
                              "effects": lsn.data.get("effects", {}), "from": lsn.workload}))
    return out


def tuned(report: dict, fingerprint: str) -> list[Lesson]:
    """A group tuning's composed point (``kernels.engine.tune.tune``'s report) as lessons: a
    ``best_config`` of the phase's workload, where its search starts (the ``seeded`` agent),
    and its projections under each group's signature key, for the next model with groups of
    the same kind. Empty when no group moved off its defaults."""
    from kernels import workloads
    if not report.get("params"):
        return []
    wl = workloads.get(report["workload"])
    point = {**wl.template("cpu").seeds()[0][1], **report["params"]}
    changed = sum(1 for r in report["groups"] if r["knobs"])
    lesson = Lesson(kind="best_config", workload=report["workload"], target="cpu", fingerprint=fingerprint,
                    shape_bucket=shape_bucket(wl.shapes.typical[0]),
                    text=(f"composed from each group tuned alone ({report['evaluations']} evaluations; "
                          f"{changed} group structures moved off their defaults)"),
                    data={"params": point, "score": 0.0, "subject": "groups tuned alone", "composed": True})
    return [lesson, *project(list(wl.groups), [lesson])]


def _group_lesson(lsn: Lesson, g: dict, own: dict, *, text: str, data: dict) -> Lesson:
    sig = g["signature"]
    return Lesson(kind=lsn.kind, workload=signature_key(sig), target=lsn.target, fingerprint=lsn.fingerprint,
                  shape_bucket=shape_bucket(group_shape(sig)), text=text,
                  data={**data, "signature": describe(sig)}, evidence=list(lsn.evidence), run_id=lsn.run_id)


def _strip(g: dict, params: dict) -> dict:
    p = prefix(g)
    return {k[len(p):]: v for k, v in params.items() if k.startswith(p) and k in g.get("knobs", [])}


# --------------------------------------------------------------------------- seeding

def seeds(groups: list[dict], space, knowledge, target: str, fingerprint: str, shapes: list,
          champions=None) -> list[Lesson]:
    """Whole-program ``best_config`` (and ``param_effect``) lessons for a problem, composed from
    what is known about each of its groups. ``champions(workload, target)`` lists a built-in
    workload's library champions (``[(bucket, params)]``); None: lessons only."""
    knowledge, champions = _Memo(knowledge), _memo_champions(champions)   # a decoder repeats its groups
    per_group: dict[int, list[tuple[dict, str]]] = {}
    effects: list[Lesson] = []
    for g in groups:
        sig = g.get("signature") or {}
        if not sig:
            continue
        found = _remembered(g, knowledge, target, fingerprint, champions)
        if found:
            per_group.setdefault(id(g), []).extend(found)
        for lsn in knowledge.relevant(signature_key(sig), target, fingerprint, [group_shape(sig)], 20):
            if lsn.kind == "param_effect":
                knob = prefix(g) + str(lsn.data.get("param", ""))
                if knob in space.names:
                    effects.append(Lesson(kind="param_effect", workload=lsn.workload, target=target,
                                          fingerprint=lsn.fingerprint, shape_bucket=lsn.shape_bucket,
                                          text=f"{knob}: {lsn.text}",
                                          data={**lsn.data, "param": knob}, evidence=list(lsn.evidence)))
    if not per_group:
        return effects
    out, seen = [], []
    for r in range(RANKS):
        params, origins, chosen = dict(space.default()), [], set()
        for g in groups:
            found = per_group.get(id(g))
            if not found:
                continue
            own, origin = found[min(r, len(found) - 1)]
            own = legal_knobs(space, own)
            bit = g.get("fuse") if g.get("form") else None
            if bit in space.names:
                if bit in chosen:
                    continue      # the other form of this edge was composed already
                own[bit] = type(space.default()[bit])(g["form"] == "fused")   # the form that was learnt
            trial = {**params, **own}
            if not space.violations(trial, shapes):
                params = trial
                chosen.add(bit)
                origins.append(f"G{g['id']} ({g['form']}) ← {origin}" if bit else f"G{g['id']} ← {origin}")
        if not origins or params in seen:
            continue
        seen.append(params)
        out.append(Lesson(kind="best_config", workload="", target=target, fingerprint=fingerprint,
                          shape_bucket=shape_bucket(shapes[0]) if shapes else "",
                          text=f"composed from what is known of its groups: {'; '.join(origins)}",
                          data={"subject": f"composed{r + 1}", "params": params, "score": 0.0,
                                "composed": True}))
    return out + effects


class _Memo:
    """One store query per (key, sizes) within one composition."""

    def __init__(self, knowledge):
        self.knowledge, self.seen = knowledge, {}

    def relevant(self, workload, target, fingerprint, shapes, k=20):
        key = (workload, target, fingerprint, tuple(s.dims for s in shapes), k)
        if key not in self.seen:
            self.seen[key] = self.knowledge.relevant(workload, target, fingerprint, shapes, k)
        return self.seen[key]


def _memo_champions(champions):
    if champions is None:
        return None
    seen = {}

    def memo(name, target):
        if (name, target) not in seen:
            seen[(name, target)] = list(champions(name, target))
        return seen[(name, target)]
    return memo


def _remembered(g: dict, knowledge, target: str, fingerprint: str, champions) -> list[tuple[dict, str]]:
    """The group's knob settings worth starting from, best first, each with where it came from."""
    sig = g["signature"]
    knobs = set(g.get("knobs", []))
    found: list[tuple[dict, str]] = []
    ranked = knowledge.relevant(signature_key(sig), target, fingerprint, [group_shape(sig)], 20)
    configs = [x for x in ranked if x.kind == "best_config"]
    order = {b: i for i, b in reversed(list(enumerate(x.shape_bucket for x in configs)))}
    # the nearest sizes first (the store's ranking), and within one size rank1, rank2, rank3
    for lsn in sorted(configs, key=lambda x: (order[x.shape_bucket], str(x.data.get("subject", "")))):
        own = {prefix(g) + k: v for k, v in (lsn.data.get("params") or {}).items() if prefix(g) + k in knobs}
        if own:
            found.append((own, f"{describe(sig)} (lesson #{lsn.id}, from {lsn.data.get('from', '?')})"))
    name = sig.get("matches")
    shape = builtin_shape(name, sig) if name else None
    if shape is not None:
        for lsn in knowledge.relevant(name, target, fingerprint, [shape], 20):
            if lsn.kind == "best_config":
                own = _from_builtin(name, g, lsn.data.get("params") or {})
                if own:
                    found.append((own, f"built-in {name} (lesson #{lsn.id}, {lsn.data.get('score', 0):.2f}x "
                                       f"at {lsn.shape_bucket})"))
        for bucket, params in (champions(name, target) if champions else []):
            own = _from_builtin(name, g, params)
            if own:
                found.append((own, f"built-in {name} library champion at {bucket}"))
    return found


def _from_builtin(name: str, g: dict, params: dict) -> dict:
    """A built-in workload's config as this group's knobs: same-named params whose value the
    group's knob accepts, and the translations in ``TRANSLATE``."""
    knobs = set(g.get("knobs", []))
    own = {prefix(g) + k: v for k, v in params.items() if prefix(g) + k in knobs}
    for src, (dst, mapping) in TRANSLATE.get(name, {}).items():
        if src in params and params[src] in mapping and prefix(g) + dst in knobs:
            own[prefix(g) + dst] = mapping[params[src]]
    return own


def legal_knobs(space, own: dict) -> dict:
    """``own`` without values the space's params refuse (a built-in's THREADS=8 where a group takes 1 or 2)."""
    return {k: v for k, v in own.items() if k in space.names and not space.param(k).check(v)}


def _fmt(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())
