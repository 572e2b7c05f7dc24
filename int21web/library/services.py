"""Writes of the review gate and the kernel library, named <entity>_<action>.

Rules (issue 4; docs/ARCHITECTURE.md, "How a kernel reaches the library"): a candidate that meets its goal may be proposed (engineer);
reviewers approve or request changes with a comment; the goal's ``required_approvals``
count; nobody approves a candidate from a run they started; an approval is dismissed when
the candidate is re-evaluated with a different result; before promotion the candidate is
re-evaluated in a fresh sandbox with the goal's held-out shapes added and must still pass.
Candidate code runs only on a worker (a task on ``target.<name>``), never in the web process.
Every decision writes an :class:`AuditEntry`.

Errors a user should see: :class:`RoleError` (who may not do this) and ``ValueError``
(what is wrong with the request), each with a sentence meant for them. The rules themselves
(does a result meet its goal, is a re-evaluation a different result) are pure functions in
``policy``; the reads they are applied to (a candidate's current result, a proposal's
approvals) are in ``selectors``.
"""
from __future__ import annotations

import os
import socket
import time

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from int21web.accounts.roles import RoleError, has_role, require
from int21web.library import evidence
from int21web.library.models import AuditEntry, Comment, KernelVersion, Proposal, Review
from int21web.library.policy import differs, score_moved, shape_bucket_of
from int21web.library.selectors import approvals, current_result, goal_check
from int21web.runs import models as rm
from int21web.runs.store import goal_from
from kernels import library as disk


# --------------------------------------------------------------------------- helpers

def _name(user) -> str:
    return user.get_username() if user is not None else "system"


def _audit(actor, action: str, *, candidate=None, proposal=None, before=None, after=None, message="") -> AuditEntry:
    return AuditEntry.objects.create(actor=actor, actor_name=_name(actor), action=action,
                                     candidate=candidate or (proposal.candidate if proposal else None),
                                     proposal=proposal, before=before or {}, after=after or {}, message=message)


def _reviewed_speedup(review: Review) -> dict:
    """The speedup per baseline of the result a review was given on (its evaluation's, else the
    candidate's recorded result)."""
    if review.evaluation_id and review.evaluation and review.evaluation.outcome:
        return (review.evaluation.outcome.get("result") or {}).get("speedup") or {}
    return (review.proposal.candidate.result or {}).get("speedup") or {}


def _snapshot(proposal: Proposal) -> dict:
    return {"state": proposal.state, "approvals": approvals(proposal).count(),
            "required": proposal.required_approvals}


def _locked_proposal(proposal_id: int) -> Proposal:
    try:
        return Proposal.objects.select_for_update().select_related("candidate__run").get(pk=proposal_id)
    except Proposal.DoesNotExist:
        raise ValueError(f"there is no proposal #{proposal_id}") from None


def _candidate(candidate_id: int) -> rm.Candidate:
    try:
        return rm.Candidate.objects.select_related("run", "run__goal").get(pk=candidate_id)
    except rm.Candidate.DoesNotExist:
        raise ValueError(f"there is no candidate #{candidate_id}") from None


# --------------------------------------------------------------------------- comments

def comment_post(*, candidate_id: int, user, body: str) -> Comment:
    """Engineers and reviewers (and admins) comment on candidates."""
    if not (has_role(user, "engineer") or has_role(user, "reviewer")):
        raise RoleError("commenting needs the engineer or reviewer role")
    body = (body or "").strip()
    if not body:
        raise ValueError("a comment needs some text")
    if len(body) > 10000:
        raise ValueError("a comment is at most 10000 characters")
    cand = _candidate(candidate_id)
    return Comment.objects.create(candidate=cand, author=user, author_name=_name(user), body=body)


# --------------------------------------------------------------------------- the gate

def promotion_propose(*, candidate_id: int, user, note: str = "") -> Proposal:
    """Propose a candidate that meets its goal for promotion into the library (engineer)."""
    require(user, "engineer", "proposing a candidate for promotion")
    with transaction.atomic():
        cand = _candidate(candidate_id)
        result = current_result(cand)
        meets, why = goal_check(cand, result)
        if not meets:
            raise ValueError(f"Only a candidate that meets its goal can be proposed: {why}.")
        existing = Proposal.objects.filter(candidate=cand, state__in=Proposal.OPEN_STATES).first()
        if existing:
            raise ValueError(f"Candidate #{cand.id} is already proposed (proposal #{existing.id}, {existing.state}).")
        goal_row = cand.run.goal
        try:
            with transaction.atomic():
                prop = Proposal.objects.create(
                    candidate=cand, note=(note or "").strip(), proposed_by=user, evaluation=result["evaluation"],
                    shape_bucket=shape_bucket_of(cand.run.spec),
                    required_approvals=max(1, goal_row.required_approvals if goal_row else 1))
        except IntegrityError:
            raise ValueError(f"Candidate #{cand.id} is already proposed.") from None
        _audit(user, "propose", proposal=prop, after={**_snapshot(prop), "status": result["status"],
                                                      "score": result["score"]}, message=why)
    return prop


def review_approve(*, proposal_id: int, user, comment: str = "") -> Review:
    """A reviewer approves. When the approvals reach the goal's count, the held-out re-check
    is queued; promotion follows when it passes."""
    require(user, "reviewer", "approving a candidate")
    with transaction.atomic():
        prop = _locked_proposal(proposal_id)
        _not_an_engine_phase(prop)
        review = approve_locked(prop, user, comment)
    return review


def _not_an_engine_phase(prop: Proposal) -> None:
    if prop.engine_proposal_id:
        raise ValueError(f"Proposal #{prop.id} is the {prop.phase} phase of engine proposal "
                         f"#{prop.engine_proposal_id}: an engine is reviewed as one unit "
                         f"(/reviews/engines/{prop.engine_proposal_id}/).")


def approve_locked(prop: Proposal, user, comment: str = "") -> Review:
    """The approval itself, on a proposal locked by the caller (review_approve, and the
    engine gate for each of its phases): the same rules for both."""
    cand = prop.candidate
    if cand.run.started_by_id is not None and cand.run.started_by_id == user.pk:
        raise RoleError(f"you started run #{cand.run_id}: someone else must approve its candidates")
    if prop.state != "open":
        raise ValueError(f"Proposal #{prop.id} is {prop.state.replace('_', ' ')}; only an open proposal "
                         "can be approved.")
    if approvals(prop).filter(reviewer=user).exists():
        raise ValueError(f"You have already approved proposal #{prop.id}.")
    before = _snapshot(prop)
    result = current_result(cand)
    meets, why = goal_check(cand, result)
    if not meets:
        raise ValueError(f"Its latest evaluation no longer meets the goal ({why}); re-evaluate it or "
                         "request changes.")
    review = Review.objects.create(proposal=prop, reviewer=user, reviewer_name=_name(user), verdict="approve",
                                   comment=(comment or "").strip(), evaluation=result["evaluation"],
                                   status=result["status"], score=result["score"])
    if approvals(prop).count() >= prop.required_approvals:
        _start_recheck(prop, user)
    _audit(user, "approve", proposal=prop, before=before, after=_snapshot(prop), message=review.comment)
    return review


def review_request_changes(*, proposal_id: int, user, comment: str) -> Review:
    """A reviewer sends the proposal back; the comment (required) says what should change."""
    require(user, "reviewer", "requesting changes")
    comment = (comment or "").strip()
    if not comment:
        raise ValueError("Say what should change: requesting changes needs a comment.")
    with transaction.atomic():
        prop = _locked_proposal(proposal_id)
        _not_an_engine_phase(prop)
        review = request_changes_locked(prop, user, comment)
    return review


def request_changes_locked(prop: Proposal, user, comment: str) -> Review:
    if prop.state not in Proposal.OPEN_STATES:
        raise ValueError(f"Proposal #{prop.id} is {prop.state.replace('_', ' ')}; it is no longer under review.")
    before = _snapshot(prop)
    result = current_result(prop.candidate)
    review = Review.objects.create(proposal=prop, reviewer=user, reviewer_name=_name(user), verdict="changes",
                                   comment=comment, evaluation=result["evaluation"], status=result["status"],
                                   score=result["score"])
    prop.state, prop.reason = "changes_requested", f"{_name(user)} requested changes"
    prop.save(update_fields=["state", "reason", "updated_at"])
    _audit(user, "request_changes", proposal=prop, before=before, after=_snapshot(prop), message=comment)
    return review


def _start_recheck(prop: Proposal, actor) -> None:
    prop.state, prop.reason = "rechecking", "re-evaluating on the held-out shapes in a fresh sandbox"
    ev = candidate_reevaluate(candidate_id=prop.candidate_id, user=None, held_out=True, proposal_id=prop.id,
                              requested_by=_name(actor))
    prop.recheck = ev
    prop.save(update_fields=["state", "reason", "recheck", "updated_at"])


# --------------------------------------------------------------------------- re-evaluation

def candidate_reevaluate(*, candidate_id: int, user=None, held_out: bool = False, proposal_id: int | None = None,
                         requested_by: str = "", sync: bool = False) -> rm.Evaluation:
    """Judge the candidate again, as a new Evaluation attempt. The work runs on a worker of
    the goal's target queue once this transaction commits; ``sync=True`` runs it here and
    is for code already running on such a worker (a task), never for the web process.
    ``user`` (an engineer) when a person asks; None when the gate asks (the held-out re-check)."""
    if user is not None:
        require(user, "engineer", "re-evaluating a candidate")
    cand = _candidate(candidate_id)
    if cand.result is None:
        # Its first judgement belongs to the run (whose orchestrator re-queues lost attempts).
        raise ValueError(f"Candidate #{cand.id} has not been judged yet; wait for its first evaluation.")
    with transaction.atomic():
        rm.Candidate.objects.select_for_update().filter(pk=cand.pk).first()   # attempt numbers in order
        attempt = (rm.Evaluation.objects.filter(candidate=cand).aggregate(n=Max("attempt"))["n"] or 0) + 1
        ev = rm.Evaluation.objects.create(
            candidate=cand, attempt=attempt, worker="queued",
            outcome={"purpose": "held_out" if held_out else "reevaluate", "proposal": proposal_id,
                     "requested_by": requested_by or _name(user)})
        _audit(user, "reevaluate", candidate=cand, after={"evaluation": ev.id, "attempt": attempt,
                                                          "held_out": held_out},
               message=("held-out re-check before promotion" if held_out else "re-evaluation requested")
               + (f" (asked by {requested_by})" if requested_by and user is None else ""))
        if not sync:
            from int21web.library.tasks import run_evaluation
            queue = f"target.{cand.run.spec.get('target', 'cpu')}"
            transaction.on_commit(lambda: run_evaluation.apply_async((ev.id,), queue=queue))
    if sync:
        evaluation_run(evaluation_id=ev.id)
        ev.refresh_from_db()
    return ev


def evaluation_run(*, evaluation_id: int) -> None:
    """On a worker: judge the candidate of a queued re-evaluation, store the outcome, then
    settle the reviews (dismissals, the held-out verdict, promotion). Safe to run twice."""
    from swarm.judge import judge, settings_for

    ev = rm.Evaluation.objects.select_related("candidate__run").get(pk=evaluation_id)
    if ev.finished_at is not None:
        return
    cand = ev.candidate
    request = dict(ev.outcome or {})
    goal = goal_from(cand.run.spec)
    held_out = request.get("purpose") == "held_out"
    # The gate's re-check: full defaults plus the goal's tightenings, the goal's held-out shapes
    # and the workload's own (never searched on).
    es = settings_for(goal, held_out=held_out)
    from int21web.runs import delivery
    rm.Evaluation.objects.filter(pk=ev.pk).update(worker=f"{socket.gethostname()}:{os.getpid()}",
                                                  heartbeat_at=timezone.now())
    with delivery.heartbeat(ev):
        started = time.monotonic()
        try:
            result, outcome_json = judge(goal, cand.source, cand.params, held_out=held_out)
        except Exception as exc:   # infrastructure (no compiler, target gone): never a verdict on the kernel
            _evaluation_broken(ev, f"{type(exc).__name__}: {exc}")
            raise
        seconds = time.monotonic() - started
    data = {**outcome_json, **request,
            "held_out_shapes": [s.label() for s in es.extra_shapes] if held_out else []}
    with transaction.atomic():
        done = rm.Evaluation.objects.filter(pk=ev.pk, finished_at__isnull=True).update(
            status=result.status, outcome=data, finished_at=timezone.now(), evaluator_seconds=seconds)
        if done:
            evaluation_recorded(evaluation_id=ev.pk)


def _evaluation_broken(ev: rm.Evaluation, why: str) -> None:
    """The evaluation could not run. The attempt is given up (lost); a proposal waiting on it
    as its held-out re-check goes back to open, to be re-checked again (promotion_recheck)."""
    with transaction.atomic():
        rm.Evaluation.objects.filter(pk=ev.pk, finished_at__isnull=True).update(
            lost_at=timezone.now(), outcome={**(ev.outcome or {}), "error": why[:2000]})
        for prop in Proposal.objects.select_for_update().filter(recheck_id=ev.pk, state="rechecking"):
            before = _snapshot(prop)
            prop.state, prop.reason = "open", f"the held-out re-check could not run ({why})"[:500]
            prop.save(update_fields=["state", "reason", "updated_at"])
            _audit(None, "recheck_error", proposal=prop, before=before, after=_snapshot(prop), message=why)
            if prop.engine_proposal_id:
                from int21web.library import engines
                engines.phase_settled(prop)


def promotion_recheck(*, proposal_id: int, user) -> Proposal:
    """Run the held-out re-check again for an open proposal that has its approvals (after a
    re-check that could not run). Engineers and reviewers may ask."""
    if not (has_role(user, "engineer") or has_role(user, "reviewer")):
        raise RoleError("re-running a held-out re-check needs the engineer or reviewer role")
    with transaction.atomic():
        prop = _locked_proposal(proposal_id)
        _not_an_engine_phase(prop)
        recheck_locked(prop, user)
    return prop


def recheck_locked(prop: Proposal, user) -> None:
    if prop.state != "open":
        raise ValueError(f"Proposal #{prop.id} is {prop.state.replace('_', ' ')}; only an open proposal "
                         "can be re-checked.")
    have = approvals(prop).count()
    if have < prop.required_approvals:
        raise ValueError(f"Proposal #{prop.id} has {have} of {prop.required_approvals} approvals; the "
                         "re-check starts with the last one.")
    before = _snapshot(prop)
    _start_recheck(prop, user)
    _audit(user, "recheck", proposal=prop, before=before, after=_snapshot(prop))


def evaluation_recorded(*, evaluation_id: int) -> None:
    """A new finished evaluation of a candidate: dismiss the approvals given on another
    result; if it is a proposal's held-out re-check, fail the proposal or promote it."""
    with transaction.atomic():
        ev = rm.Evaluation.objects.select_related("candidate__run").get(pk=evaluation_id)
        cand = ev.candidate
        res = (ev.outcome or {}).get("result") or {}
        new = {"status": ev.status, "score": res.get("score", 0.0), "speedup": res.get("speedup") or {}}
        meets = goal_check(cand, {"status": ev.status, "speedup": res.get("speedup") or {}}) \
            if ev.status == "ok" else (False, "")
        for prop in Proposal.objects.select_for_update().filter(candidate=cand, state__in=Proposal.OPEN_STATES):
            for review in approvals(prop).exclude(evaluation_id=ev.pk):
                old = {"status": review.status, "score": review.score, "speedup": _reviewed_speedup(review)}
                why = differs(old, new, meets)
                if why is None:
                    moved = score_moved(old, new)
                    if moved:
                        _audit(None, "score_moved", proposal=prop, before=_snapshot(prop), after=_snapshot(prop),
                               message=f"re-evaluation #{ev.attempt}: {moved}; {review.reviewer_name}'s approval stands")
                    continue
                before = _snapshot(prop)
                review.dismissed_at = timezone.now()
                review.dismissed_reason = f"re-evaluation #{ev.attempt}: {why}"[:500]
                review.save(update_fields=["dismissed_at", "dismissed_reason"])
                _audit(None, "dismiss_approval", proposal=prop, before=before, after=_snapshot(prop),
                       message=f"{review.reviewer_name}'s approval dismissed: {review.dismissed_reason}")
            if prop.state == "rechecking" and prop.recheck_id == ev.pk:
                _settle_recheck(prop, ev, new)


def _settle_recheck(prop: Proposal, ev: rm.Evaluation, new: dict) -> None:
    before = _snapshot(prop)
    if new["status"] != "ok":
        reason = (ev.outcome or {}).get("reason", "")
        prop.state, prop.reason = "recheck_failed", f"held-out re-check: {new['status']}: {reason}"[:500]
        prop.save(update_fields=["state", "reason", "updated_at"])
        _audit(None, "recheck_failed", proposal=prop, before=before, after=_snapshot(prop), message=reason)
    elif approvals(prop).count() < prop.required_approvals:
        prop.state = "open"
        prop.reason = "the held-out re-check passed with a different result; approvals were dismissed"
        prop.save(update_fields=["state", "reason", "updated_at"])
        _audit(None, "recheck_passed", proposal=prop, before=before, after=_snapshot(prop), message=prop.reason)
    else:
        _audit(None, "recheck_passed", proposal=prop, before=before, after=before,
               message=(ev.outcome or {}).get("reason", ""))
        if not prop.engine_proposal_id:
            kernel_promote(proposal_id=prop.id)
    if prop.engine_proposal_id:
        # one phase of an engine: the engine is decided (promoted, failed, reopened) as a unit
        from int21web.library import engines
        engines.phase_settled(prop)


# --------------------------------------------------------------------------- the library

def kernel_promote(*, proposal_id: int, user=None) -> KernelVersion:
    """Promote an approved candidate whose held-out re-check passed: a new version for its
    (workload, target), champion of its shape bucket unless the champion scores higher,
    written to the library folder on commit. The gate calls this itself when the re-check
    passes; ``user`` (a reviewer) when a person does."""
    if user is not None:
        require(user, "reviewer", "promoting a kernel")
    with transaction.atomic():
        prop = _locked_proposal(proposal_id)
        cand = prop.candidate
        if prop.state != "rechecking":
            raise ValueError(f"Proposal #{prop.id} is {prop.state.replace('_', ' ')}; only an approved proposal "
                             "whose held-out re-check passed can be promoted.")
        ev = prop.recheck
        if ev is None or ev.finished_at is None:
            raise ValueError(f"Proposal #{prop.id} is still being re-checked on its held-out shapes.")
        if ev.status != "ok":
            raise ValueError(f"Proposal #{prop.id} failed its held-out re-check ({ev.status}).")
        if approvals(prop).count() < prop.required_approvals:
            raise ValueError(f"Proposal #{prop.id} has {approvals(prop).count()} of "
                             f"{prop.required_approvals} approvals.")
        spec = cand.run.spec
        workload, target = spec["workload"], spec.get("target", "cpu")
        score = (ev.outcome.get("result") or {}).get("score", 0.0)
        champ = KernelVersion.objects.select_for_update().filter(
            workload=workload, target=target, shape_bucket=prop.shape_bucket, champion=True).first()
        crowned = champ is None or score >= champ.score
        if crowned and champ is not None:
            champ.champion = False
            champ.save(update_fields=["champion"])
        kv = _new_version(workload=workload, target=target, shape_bucket=prop.shape_bucket, champion=crowned,
                          candidate=cand, proposal=prop, source=cand.source, params=cand.params, score=score,
                          manifest={}, promoted_by=user)
        version = kv.version
        kv.manifest = evidence.manifest(kv, prop, ev)
        kv.save(update_fields=["manifest"])
        before = _snapshot(prop)
        prop.state, prop.reason = "promoted", f"promoted as {workload} on {target} v{version}"
        prop.save(update_fields=["state", "reason", "updated_at"])
        _audit(user, "promote", proposal=prop, before=before,
               after={**_snapshot(prop), "kernel": kv.id, "version": version, "champion": crowned},
               message=prop.reason + (" (champion)" if crowned else f" (v{champ.version} stays champion)"))
        transaction.on_commit(lambda: kernel_write(kernel_id=kv.id))
    return kv


def _new_version(*, workload: str, target: str, **fields) -> KernelVersion:
    """The next version number of (workload, target). PostgreSQL refuses FOR UPDATE with an
    aggregate, so a concurrent promotion that took the same number is met by the unique
    constraint and we take the next one."""
    for _ in range(5):
        version = (KernelVersion.objects.filter(workload=workload, target=target)
                   .aggregate(n=Max("version"))["n"] or 0) + 1
        try:
            with transaction.atomic():
                return KernelVersion.objects.create(workload=workload, target=target, version=version, **fields)
        except IntegrityError:
            continue
    raise RuntimeError(f"could not number a new {workload} version on {target}: too many concurrent promotions")


def kernel_crown(*, kernel_id: int, user) -> KernelVersion:
    """Make a promoted version the champion of its shape bucket (reviewer)."""
    require(user, "reviewer", "choosing a champion")
    with transaction.atomic():
        kv = KernelVersion.objects.select_for_update().filter(pk=kernel_id).first()
        if kv is None:
            raise ValueError(f"there is no promoted kernel #{kernel_id}")
        old = KernelVersion.objects.filter(workload=kv.workload, target=kv.target, shape_bucket=kv.shape_bucket,
                                           champion=True).exclude(pk=kv.pk).first()
        if old:
            old.champion = False
            old.save(update_fields=["champion"])
        kv.champion = True
        kv.save(update_fields=["champion"])
        _audit(user, "crown", candidate=kv.candidate, before={"champion": old.version if old else None},
               after={"champion": kv.version}, message=f"{kv} is the champion for {kv.shape_bucket}")
        transaction.on_commit(lambda: kernel_write(kernel_id=kv.id))
    return kv


def kernel_write(*, kernel_id: int, root=None) -> None:
    """Write a promoted version to the library folder (and its champion pointer)."""
    from kernels import native
    kv = KernelVersion.objects.get(pk=kernel_id)
    root = root or settings.INT21_LIBRARY_DIR
    disk.write_version(native.signed(kv.manifest), kv.source, root)   # signed when the library is keyed
    if kv.champion:
        disk.set_champion(kv.workload, kv.target, kv.shape_bucket, kv.version, root)


def library_export(*, root=None) -> int:
    """Write every promoted version and the champions to ``root`` (a host's library folder),
    engine versions included."""
    from int21web.library import engines
    from int21web.library.models import EngineVersion
    n = 0
    for kv in KernelVersion.objects.order_by("id"):
        kernel_write(kernel_id=kv.id, root=root)
        n += 1
    for ver in EngineVersion.objects.order_by("id"):
        engines.engine_write(version_id=ver.id, root=root)
        n += 1
    return n
