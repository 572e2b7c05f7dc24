"""python manage.py library list | export [--to DIR] — the kernel library from the command line."""
import json

from django.conf import settings
from django.core.management.base import BaseCommand

from int21web.library import services
from int21web.library.models import KernelVersion


class Command(BaseCommand):
    help = ("list: promoted kernels (version, shape bucket, champion, score). export: write every promoted "
            "version and the champions to a library folder (default INT21_LIBRARY_DIR), e.g. on a host other "
            "than the worker that promoted them, for kernels.library.load.")

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("list", help="promoted kernels")
        ls.add_argument("--json", action="store_true", help="one JSON array on stdout")
        ex = sub.add_parser("export", help="write the library folder")
        ex.add_argument("--to", default=None, help="folder (default: INT21_LIBRARY_DIR)")

    def handle(self, *args, **o):
        if o["action"] == "export":
            root = o["to"] or settings.INT21_LIBRARY_DIR
            n = services.library_export(root=root)
            self.stdout.write(f"{n} promoted version(s) written to {root}")
            return
        rows = [{"id": kv.id, "workload": kv.workload, "target": kv.target, "version": kv.version,
                 "shape_bucket": kv.shape_bucket, "champion": kv.champion, "score": kv.score,
                 "candidate": kv.candidate_id, "promoted_at": kv.created_at.isoformat()}
                for kv in KernelVersion.objects.order_by("workload", "target", "version")]
        if o["json"]:
            self.stdout.write(json.dumps(rows))
            return
        if not rows:
            self.stdout.write("Nothing promoted yet.")
        for r in rows:
            self.stdout.write(f"{r['workload']:<10} {r['target']:<5} v{r['version']:<4} {r['shape_bucket']:<14} "
                              f"{'champion' if r['champion'] else '':<9} score {r['score']:.3f}  "
                              f"candidate #{r['candidate']}")
