"""The evidence bundle of a promoted kernel: its manifest (JSON) and the download zip."""
from __future__ import annotations

import io
import zipfile

from kernels import library as disk
from kernels import workloads

MANIFEST_FORMAT = 1


def candidate_evidence(cand, proposal, recheck) -> dict:
    """A promoted candidate's evidence: its goal, where it came from, every finished
    evaluation, the held-out re-check, the proposal, the reviews and the approvals that count.
    A kernel's manifest is this plus the kernel; an engine's holds one per phase."""
    from int21web.library.models import Review
    from int21web.runs.models import Evaluation

    run = cand.run
    evaluations = [{"id": e.id, "attempt": e.attempt, "status": e.status, "worker": e.worker,
                    "finished_at": e.finished_at.isoformat() if e.finished_at else None,
                    "purpose": (e.outcome or {}).get("purpose", "search"), "outcome": e.outcome}
                   for e in Evaluation.objects.filter(candidate=cand, finished_at__isnull=False).order_by("attempt")]
    reviews = [{"reviewer": r.reviewer_name, "verdict": r.verdict, "comment": r.comment,
                "at": r.created_at.isoformat(), "status": r.status, "score": r.score,
                "dismissed": r.dismissed_reason or None}
               for r in Review.objects.filter(proposal=proposal).order_by("id")]
    return {
        "metric": run.spec.get("metric", "speedup"),
        "goal": run.spec,
        "candidate": {"id": cand.id, "run": run.id, "generation": cand.generation, "agent": cand.agent,
                      "rationale": cand.rationale, "parents": cand.parents},
        "target_fingerprint": (recheck.outcome or {}).get("fingerprint", {}),
        "held_out_recheck": {"evaluation": recheck.id, "status": recheck.status,
                             "shapes": (recheck.outcome or {}).get("held_out_shapes", []),
                             "reason": (recheck.outcome or {}).get("reason", "")},
        "evaluations": evaluations,
        "proposal": {"id": proposal.id, "proposed_by": proposal.proposed_by.get_username()
                     if proposal.proposed_by else None, "note": proposal.note,
                     "required_approvals": proposal.required_approvals},
        "approvals": [r for r in reviews if r["verdict"] == "approve" and not r["dismissed"]],
        "reviews": reviews,
    }


def manifest(kv, proposal, recheck) -> dict:
    """Everything a user needs to trust (or re-check) the kernel without our database."""
    wl = workloads.get(kv.workload)
    return {
        "format": MANIFEST_FORMAT,
        "workload": kv.workload,
        "target": kv.target,
        "version": kv.version,
        "shape_bucket": kv.shape_bucket,
        "champion_when_promoted": kv.champion,
        "entry_point": wl.signature(kv.target),
        "source_file": disk.SOURCE_FILES[kv.target],
        "source_sha256": disk.sha256(kv.source),
        "params": kv.params,
        "score": kv.score,
        **candidate_evidence(kv.candidate, proposal, recheck),
        "promoted_by": kv.promoted_by.get_username() if kv.promoted_by else "the approval gate",
        "promoted_at": kv.created_at.isoformat(),
    }


def zip_name(kv) -> str:
    return f"{kv.workload}-{kv.target}-v{kv.version}.zip"


def zip_bytes(kv) -> bytes:
    """The kernel as it builds and tests itself (kernels.bundle: tuned parameters baked in, a
    header, the harness's build command, a test program) and its manifest, in a folder named
    after the version."""
    from kernels import bundle
    folder = f"{kv.workload}-{kv.target}-v{kv.version}"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path, text in bundle.files(kv.workload, kv.target, kv.source, kv.params, kv.manifest).items():
            info = zipfile.ZipInfo(f"{folder}/{path}")
            info.external_attr = (0o755 if path.endswith(".sh") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, text)
    return buf.getvalue()


# --------------------------------------------------------------------------- engines

def engine_zip_name(ev) -> str:
    return f"{ev.engine_name}-engine-v{ev.version}.zip"


def engine_zip_bytes(ev, *, root=None) -> bytes:
    """An engine version as it builds and runs itself (kernels.bundle.engine_files: each
    phase's source with its params baked in, the header, the build command, a C example
    checked against the float64 reference, the weights) and its manifest."""
    from django.conf import settings

    from kernels import bundle
    from kernels.engine import release
    weights = None
    try:
        _, _, weights = disk.engine_files(ev.engine_name, ev.version, root or settings.INT21_LIBRARY_DIR)
    except disk.LibraryError:
        pass                     # not written to this host's library folder: the zip says where it is
    try:
        calls = release.example_case(ev.manifest)
    except Exception:            # the phases' imports are gone from the ops store: no example
        calls = None
    folder = f"{ev.engine_name}-engine-v{ev.version}"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in bundle.engine_files(ev.manifest, ev.sources, weights, calls).items():
            info = zipfile.ZipInfo(f"{folder}/{path}")
            info.external_attr = (0o755 if path.endswith(".sh") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return buf.getvalue()
