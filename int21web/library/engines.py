"""The approval gate for engines: one unit, with every phase's evidence (writes).

An engine proposal (:class:`EngineProposal`) holds one phase :class:`Proposal` per phase of
the engine (its champion candidate, by default the one the last ``engine run`` found), and
every rule of the kernel gate applies to each of them through the same code
(``services.approve_locked``, ``request_changes_locked``, ``recheck_locked``, the held-out
re-check task and ``evaluation_recorded``'s dismissals): the goal met to be proposed and
approved, the goals' approvals (the most any phase's goal asks), nobody approving a run they
started, approvals dismissed by a different result, a fresh sandbox re-check of every phase.
What is different is that they are decided together: one approval or request for changes
covers every phase, one phase failing its re-check fails the engine, and the engine is
promoted, as one :class:`EngineVersion`, only when every phase's re-check has passed.

The version's manifest (kernels.engine.release: the model, each phase's source digest,
params, ABI, shapes and fusion groups, the weights' layout and digest; plus the approvals
and each phase's evidence) is written with the sources and weights to the library folder on
commit, signed when ``INT21_LIBRARY_KEY`` is set; ``kernels.library.load_engine`` reads it.
Errors: RoleError (who may not) and ValueError (what is wrong), each a sentence for the user.
"""
from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from int21web.accounts.roles import RoleError, has_role, require
from int21web.library import evidence, services
from int21web.library.models import AuditEntry, EngineProposal, EngineVersion, Proposal
from int21web.library.policy import shape_bucket_of
from int21web.library.selectors import approvals, current_result, goal_check
from int21web.runs import models as rm
from kernels import library as disk


def _name(user) -> str:
    return user.get_username() if user is not None else "system"


def _snapshot(ep: EngineProposal) -> dict:
    return {"state": ep.state, "phases": {p.phase: p.state for p in ep.phases.all()},
            "approvals": len(engine_approvals(ep)), "required": ep.required_approvals}


def _audit(actor, action: str, ep: EngineProposal, *, before=None, message="") -> None:
    AuditEntry.objects.create(actor=actor, actor_name=_name(actor), action=action, engine_proposal=ep,
                              before=before or {}, after=_snapshot(ep), message=message)


def engine_approvals(ep: EngineProposal) -> list[str]:
    """The reviewers whose approval counts on every phase (given, not dismissed)."""
    names = None
    for prop in ep.phases.all():
        these = set(approvals(prop).values_list("reviewer_name", flat=True))
        names = these if names is None else names & these
    return sorted(names or ())


def _locked(proposal_id: int) -> EngineProposal:
    try:
        return EngineProposal.objects.select_for_update().select_related("engine").get(pk=proposal_id)
    except EngineProposal.DoesNotExist:
        raise ValueError(f"there is no engine proposal #{proposal_id}") from None


def _phases(ep: EngineProposal) -> list[Proposal]:
    return list(Proposal.objects.select_for_update().select_related("candidate__run")
                .filter(engine_proposal=ep).order_by("phase"))


def champion_candidates(engine) -> dict:
    """{phase: candidate id} of the engine's last run, for the phases it found a correct kernel for."""
    return {p: r["candidate_id"] for p, r in (engine.results or {}).items() if r.get("correct") and r.get("candidate_id")}


# --------------------------------------------------------------------------- proposing

def engine_propose(*, engine_name: str, user, note: str = "", candidates: dict | None = None) -> EngineProposal:
    """Propose an engine for promotion (engineer): every phase's champion candidate (or
    ``candidates`` = {phase: id}), each meeting its goal."""
    from int21web.ops.models import Engine
    require(user, "engineer", "proposing an engine for promotion")
    engine = Engine.objects.filter(name=engine_name).first()
    if engine is None:
        raise ValueError(f"there is no engine named {engine_name!r}")
    phases = (engine.record or {}).get("phases") or {}
    chosen = {**champion_candidates(engine), **{str(k): int(v) for k, v in (candidates or {}).items()}}
    unknown = [p for p in chosen if p not in phases]
    if unknown:
        raise ValueError(f"{engine_name} has no phase {', '.join(unknown)} (it has {', '.join(phases)})")
    missing = [p for p in phases if p not in chosen]
    if missing:
        raise ValueError(f"An engine is proposed whole: {engine_name} has no correct kernel for "
                         f"{', '.join(missing)} yet (run `manage.py engine run {engine_name}`).")
    with transaction.atomic():
        if EngineProposal.objects.filter(engine=engine, state__in=EngineProposal.OPEN_STATES).exists():
            raise ValueError(f"Engine {engine_name} is already proposed; see the review queue.")
        rows = []
        for phase, cid in sorted(chosen.items()):
            cand = rm.Candidate.objects.select_related("run", "run__goal").filter(pk=cid).first()
            if cand is None:
                raise ValueError(f"{phase}: there is no candidate #{cid}")
            if cand.run.spec.get("workload") != phases[phase]["workload"]:
                raise ValueError(f"{phase}: candidate #{cid} is a {cand.run.spec.get('workload')} kernel, "
                                 f"not one of {phases[phase]['workload']}")
            result = current_result(cand)
            meets, why = goal_check(cand, result)
            if not meets:
                raise ValueError(f"{phase}: only a candidate that meets its goal can be proposed: {why}.")
            if Proposal.objects.filter(candidate=cand, state__in=Proposal.OPEN_STATES).exists():
                raise ValueError(f"{phase}: candidate #{cid} is already proposed on its own.")
            rows.append((phase, cand, result, why))
        required = max(max(1, c.run.goal.required_approvals if c.run.goal else 1) for _, c, _, _ in rows)
        try:
            with transaction.atomic():
                ep = EngineProposal.objects.create(engine=engine, note=(note or "").strip(), proposed_by=user,
                                                   required_approvals=required)
        except IntegrityError:
            raise ValueError(f"Engine {engine_name} is already proposed.") from None
        for phase, cand, result, why in rows:
            Proposal.objects.create(candidate=cand, note=ep.note, proposed_by=user, evaluation=result["evaluation"],
                                    shape_bucket=shape_bucket_of(cand.run.spec), required_approvals=required,
                                    engine_proposal=ep, phase=phase)
        _audit(user, "engine_propose", ep, message="; ".join(f"{p}: #{c.id}, {w}" for p, c, _, w in rows))
    return ep


# --------------------------------------------------------------------------- reviewing

def _must_be_open(ep: EngineProposal, done: str) -> None:
    if ep.state != "open":
        raise ValueError(f"Engine proposal #{ep.id} is {ep.state.replace('_', ' ')}; only an open proposal "
                         f"can be {done}.")


def engine_approve(*, proposal_id: int, user, comment: str = "") -> EngineProposal:
    """A reviewer approves the engine: every open phase at once, by the kernel gate's rules.
    When the approvals reach the count, every phase's held-out re-check is queued."""
    require(user, "reviewer", "approving an engine")
    with transaction.atomic():
        ep = _locked(proposal_id)
        _must_be_open(ep, "approved")
        before = _snapshot(ep)
        phases = _phases(ep)
        for prop in phases:      # a run you started, in any phase, is not yours to approve
            run = prop.candidate.run
            if run.started_by_id is not None and run.started_by_id == user.pk:
                raise RoleError(f"you started run #{run.id} ({prop.phase}): someone else must approve this engine")
        todo = [p for p in phases if p.state == "open"]
        if not todo or all(approvals(p).filter(reviewer=user).exists() for p in todo):
            raise ValueError(f"You have already approved engine proposal #{ep.id}.")
        for prop in todo:
            if approvals(prop).filter(reviewer=user).exists():
                continue
            try:
                services.approve_locked(prop, user, comment)
            except ValueError as exc:
                raise ValueError(f"{prop.phase}: {exc}") from None
        if all(p.state == "rechecking" for p in phases):
            ep.state, ep.reason = "rechecking", "every phase re-evaluated on its held-out shapes in a fresh sandbox"
            ep.save(update_fields=["state", "reason", "updated_at"])
        _audit(user, "engine_approve", ep, before=before, message=(comment or "").strip())
    return ep


def engine_request_changes(*, proposal_id: int, user, comment: str) -> EngineProposal:
    """A reviewer sends the engine back (every phase); the comment says what should change."""
    require(user, "reviewer", "requesting changes")
    comment = (comment or "").strip()
    if not comment:
        raise ValueError("Say what should change: requesting changes needs a comment.")
    with transaction.atomic():
        ep = _locked(proposal_id)
        if ep.state not in EngineProposal.OPEN_STATES:
            raise ValueError(f"Engine proposal #{ep.id} is {ep.state.replace('_', ' ')}; it is no longer under review.")
        before = _snapshot(ep)
        for prop in _phases(ep):
            if prop.state in Proposal.OPEN_STATES:
                services.request_changes_locked(prop, user, comment)
        ep.state, ep.reason = "changes_requested", f"{_name(user)} requested changes"
        ep.save(update_fields=["state", "reason", "updated_at"])
        _audit(user, "engine_request_changes", ep, before=before, message=comment)
    return ep


def engine_recheck(*, proposal_id: int, user) -> EngineProposal:
    """Run the held-out re-checks again of the phases whose re-check could not run (engineer
    or reviewer)."""
    if not (has_role(user, "engineer") or has_role(user, "reviewer")):
        raise RoleError("re-running a held-out re-check needs the engineer or reviewer role")
    with transaction.atomic():
        ep = _locked(proposal_id)
        _must_be_open(ep, "re-checked")
        before = _snapshot(ep)
        phases = _phases(ep)
        todo = [p for p in phases if p.state == "open"]
        for prop in todo:
            try:
                services.recheck_locked(prop, user)
            except ValueError as exc:
                raise ValueError(f"{prop.phase}: {exc}") from None
        if all(p.state == "rechecking" for p in phases):
            ep.state, ep.reason = "rechecking", "re-checking again"
            ep.save(update_fields=["state", "reason", "updated_at"])
        _audit(user, "engine_recheck", ep, before=before)
    return ep


def phase_settled(prop: Proposal) -> None:
    """A phase's held-out re-check ended (or could not run), inside the caller's transaction:
    decide the engine. A failed phase fails it; a phase back to open reopens it; every phase
    passed with its approvals promotes it; otherwise it waits for the other phases."""
    ep = EngineProposal.objects.select_for_update().get(pk=prop.engine_proposal_id)
    if ep.state not in EngineProposal.OPEN_STATES:
        return
    before = _snapshot(ep)
    phases = _phases(ep)
    failed = [p for p in phases if p.state == "recheck_failed"]
    if failed:
        bad = failed[0]
        for other in phases:
            if other.state in Proposal.OPEN_STATES:
                other.state = "recheck_failed"
                other.reason = f"the engine's {bad.phase} phase failed its held-out re-check"
                other.save(update_fields=["state", "reason", "updated_at"])
        ep.state, ep.reason = "recheck_failed", f"{bad.phase}: {bad.reason}"[:500]
        ep.save(update_fields=["state", "reason", "updated_at"])
        _audit(None, "engine_recheck_failed", ep, before=before, message=ep.reason)
        return
    reopened = [p for p in phases if p.state == "open"]
    if reopened:
        ep.state = "open"
        ep.reason = "; ".join(f"{p.phase}: {p.reason}" for p in reopened)[:500]
        ep.save(update_fields=["state", "reason", "updated_at"])
        _audit(None, "engine_reopened", ep, before=before, message=ep.reason)
        return
    if all(p.recheck and p.recheck.finished_at and p.recheck.status == "ok" for p in phases):
        engine_promote(proposal_id=ep.id)


# --------------------------------------------------------------------------- the library

def engine_promote(*, proposal_id: int, user=None) -> EngineVersion:
    """Promote an engine every phase of which passed its held-out re-check with its approvals:
    the next version of the engine, written to the library folder on commit. The gate calls
    this itself; ``user`` (a reviewer) when a person does."""
    from kernels.engine import release
    if user is not None:
        require(user, "reviewer", "promoting an engine")
    with transaction.atomic():
        ep = _locked(proposal_id)
        if ep.state not in EngineProposal.OPEN_STATES:
            raise ValueError(f"Engine proposal #{ep.id} is {ep.state.replace('_', ' ')}.")
        phases = _phases(ep)
        for prop in phases:
            ev = prop.recheck
            if prop.state != "rechecking" or ev is None or ev.finished_at is None or ev.status != "ok":
                raise ValueError(f"{prop.phase}: only an approved phase whose held-out re-check passed can be "
                                 f"promoted (it is {prop.state.replace('_', ' ')}).")
            if approvals(prop).count() < prop.required_approvals:
                raise ValueError(f"{prop.phase}: {approvals(prop).count()} of {prop.required_approvals} approvals.")
        engine = ep.engine
        chosen = {p.phase: (p.candidate.source, p.candidate.params) for p in phases}
        try:
            rel = release.release(engine.name, chosen)
        except (LookupError, ValueError) as exc:
            raise ValueError(f"Engine {engine.name} cannot be released: {exc}") from None
        names = engine_approvals(ep)
        phase_evidence = {p.phase: evidence.candidate_evidence(p.candidate, p, p.recheck) for p in phases}
        first = phase_evidence[phases[0].phase]["approvals"]
        manifest = {
            **rel.manifest,
            "approvals": [{k: a[k] for k in ("reviewer", "comment", "at")} for a in first if a["reviewer"] in names],
            "proposal": {"id": ep.id, "proposed_by": ep.proposed_by.get_username() if ep.proposed_by else None,
                         "note": ep.note, "required_approvals": ep.required_approvals},
            "evidence": phase_evidence,
            "promoted_by": _name(user) if user else "the approval gate",
            "promoted_at": timezone.now().isoformat(),
        }
        for _ in range(5):
            version = (EngineVersion.objects.filter(engine_name=engine.name).aggregate(n=Max("version"))["n"] or 0) + 1
            try:
                with transaction.atomic():
                    ver = EngineVersion.objects.create(
                        engine_name=engine.name, version=version, engine=engine, proposal=ep, sources=rel.sources,
                        params={p: chosen[p][1] for p in chosen}, manifest={**manifest, "version": version},
                        promoted_by=user)
                break
            except IntegrityError:
                continue
        else:
            raise RuntimeError(f"could not number a new version of engine {engine.name}")
        before = _snapshot(ep)
        for prop in phases:
            prop.state, prop.reason = "promoted", f"promoted with engine {engine.name} v{version}"
            prop.save(update_fields=["state", "reason", "updated_at"])
        ep.state, ep.reason = "promoted", f"promoted as engine {engine.name} v{version}"
        ep.save(update_fields=["state", "reason", "updated_at"])
        _audit(user, "engine_promote", ep, before=before, message=ep.reason)
        transaction.on_commit(lambda: engine_write(version_id=ver.id))
    return ver


def engine_write(*, version_id: int, root=None) -> None:
    """Write a promoted engine version to the library folder: its sources, its weights (read
    again from the ops store, and checked against the digest in the manifest) and the
    manifest, signed when the library is keyed."""
    from kernels import native
    from kernels.engine import release
    from kernels.engine.native import ENGINE_SIGNED_FIELDS
    ver = EngineVersion.objects.get(pk=version_id)
    chosen = {p: (ver.sources[p], ver.params[p]) for p in ver.sources}
    rel = release.release(ver.engine_name, chosen)
    if rel.manifest["weights"]["sha256"] != ver.manifest["weights"]["sha256"]:
        raise RuntimeError(f"{ver}: the engine's stored weights changed since it was approved; not written")
    disk.write_engine_version(native.signed(ver.manifest, ENGINE_SIGNED_FIELDS), ver.sources, rel.weights,
                              root or settings.INT21_LIBRARY_DIR)
