"""python manage.py import_op FILE.py [--name N] [--set batch_size=64 ...] [--preview] [--json] --as USER"""
import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from int21web.api.cli import add_user_arg, user
from int21web.ops import services


class Command(BaseCommand):
    help = ("Import a PyTorch problem in the KernelBench format as a workload: captured in the sandbox, "
            "checked against the model's own outputs, kernels generated. --preview stores nothing.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="the problem file (- for standard input)")
        parser.add_argument("--name", help="lower_case name for the workload (default: op_<digest>)")
        parser.add_argument("--set", action="append", default=[], metavar="CONST=VALUE[,…]",
                            help="another shape, as module constants (repeat for more shapes)")
        parser.add_argument("--preview", action="store_true", help="show what would be captured; store nothing")
        parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        add_user_arg(parser)

    def handle(self, *args, **o):
        try:
            source = sys.stdin.read() if o["file"] == "-" else Path(o["file"]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{o['file']}: {getattr(exc, 'strerror', None) or exc}", returncode=2) from None
        try:
            overrides = services.parse_overrides(o["set"])
            if o["preview"]:
                out = services.op_preview(source=source, overrides=overrides)
                self._print(o, out, lambda p: self._preview_lines(p))
                return
            actor = user(o["as_user"])
            from int21web.accounts.roles import require
            require(actor, "engineer", "import a problem")
            row = services.op_import(source=source, name=o["name"], overrides=overrides, user=actor)
        except services.ImportRefused as exc:
            if o["json"]:
                self.stdout.write(json.dumps({"ok": False, "field": exc.field, "error": exc.message,
                                              "failure": exc.failure}))
            raise CommandError(f"{exc.field}: {exc.message}", returncode=2) from None
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        out = {"ok": True, "name": row.name, "digest": row.digest, "summary": row.summary}
        self._print(o, out, lambda r: [f"imported {r['name']} ({r['digest'][:12]}): dims "
                                       f"{' x '.join(r['summary'].get('dims', []))}, "
                                       f"{len(r['summary'].get('groups', []))} fusion group(s); "
                                       f"write a goal for it: workload {r['name']}"])

    def _print(self, o, data, lines):
        if o["json"]:
            self.stdout.write(json.dumps(data, default=str))
        else:
            for line in lines(data):
                self.stdout.write(line)

    @staticmethod
    def _preview_lines(p):
        yield "supported" if p["supported"] else f"not importable: {(p.get('failure') or {}).get('reason', '')}"
        for s in p.get("survey", []):
            yield f"  {'ok ' if s['supported'] else 'NO '} {s['node']:<24} {s['target']}  {s.get('why') or ''}"
        for g in p.get("groups", []):
            yield f"  group {g['id']}: {g['family']} ({g['form']}) {', '.join(g['members'])}"
