"""python manage.py reviews list [--state S] | show ID | propose CANDIDATE_ID --as USER [--note TEXT]
| approve ID --as USER [--comment TEXT] | request-changes ID --as USER --comment TEXT
| kernels [--workload W] | kernel ID | download KERNEL_ID [-o FILE]
The approval gate and the kernel library through int21web.library's services (the same rules
as the review page and the API: the goal's approvals, no approving a run you started, …)."""
from pathlib import Path


from int21web.api import cli, selectors
from int21web.api.routes.library import _candidate, _kernel, _proposal
from int21web.library import evidence, services


class Command(cli.ApiCommand):
    help = "Proposals, reviews and promoted kernels, as the review page and the API see them."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("list", help="proposals, newest first")
        ls.add_argument("--state", choices=["open", "changes_requested", "rechecking", "recheck_failed", "promoted"])
        sub.add_parser("show", help="a proposal with its reviews and audit trail").add_argument("proposal_id", type=int)
        p = sub.add_parser("propose", help="propose a candidate that meets its goal")
        p.add_argument("candidate_id", type=int)
        p.add_argument("--note", default="")
        cli.add_user_arg(p)
        a = sub.add_parser("approve", help="approve a proposal")
        a.add_argument("proposal_id", type=int)
        a.add_argument("--comment", default="")
        cli.add_user_arg(a)
        r = sub.add_parser("request-changes", help="send a proposal back, saying what should change")
        r.add_argument("proposal_id", type=int)
        r.add_argument("--comment", required=True)
        cli.add_user_arg(r)
        k = sub.add_parser("kernels", help="promoted kernels")
        k.add_argument("--workload")
        k.add_argument("--target")
        sub.add_parser("kernel", help="a promoted kernel with its manifest").add_argument("kernel_id", type=int)
        d = sub.add_parser("download", help="a promoted kernel's zip (source + manifest.json)")
        d.add_argument("kernel_id", type=int)
        d.add_argument("-o", "--output", help="file to write (default: its own name, here)")

    def _handle(self, o):
        act = o["action"]
        if act == "list":
            for p in selectors.proposals(state=o["state"]):
                self.stdout.write(f"{p['id']:>5}  candidate #{p['candidate']} ({p['workload']} on {p['target']})  "
                                  f"{p['state']:<17} {p['approvals']}/{p['required_approvals']} approvals  "
                                  f"{p['reason']}")
        elif act == "show":
            cli.emit(self.stdout, selectors.proposal_json(_proposal(o["proposal_id"]), audit=True))
        elif act == "propose":
            p = services.promotion_propose(candidate_id=_candidate(o["candidate_id"]), user=cli.user(o["as_user"]),
                                           note=o["note"])
            self.stdout.write(f"proposal {p.id}: candidate #{p.candidate_id} is in the review queue")
        elif act == "approve":
            services.review_approve(proposal_id=_proposal(o["proposal_id"]).id, user=cli.user(o["as_user"]),
                                    comment=o["comment"])
            p = _proposal(o["proposal_id"])
            self.stdout.write(f"proposal {p.id}: {p.state} ({p.reason or 'approved'})")
        elif act == "request-changes":
            services.review_request_changes(proposal_id=_proposal(o["proposal_id"]).id, user=cli.user(o["as_user"]),
                                            comment=o["comment"])
            self.stdout.write(f"proposal {o['proposal_id']}: changes requested")
        elif act == "kernels":
            for k in selectors.kernels(workload=o["workload"], target=o["target"]):
                self.stdout.write(f"{k['id']:>5}  {k['workload']} on {k['target']} v{k['version']}  "
                                  f"{k['shape_bucket']}{'  champion' if k['champion'] else ''}  score {k['score']:.3g}")
        elif act == "kernel":
            cli.emit(self.stdout, selectors.kernel_json(_kernel(o["kernel_id"]), detail=True))
        elif act == "download":
            kv = _kernel(o["kernel_id"])
            out = Path(o["output"] or evidence.zip_name(kv))
            out.write_bytes(evidence.zip_bytes(kv))
            self.stdout.write(f"{out} written (source + manifest.json)")
