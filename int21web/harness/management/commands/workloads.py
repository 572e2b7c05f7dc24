"""python manage.py workloads [--json]: the built-in workloads, signatures and design spaces."""
import json

from django.core.management.base import BaseCommand

from kernels import workloads


class Command(BaseCommand):
    help = "List the built-in workloads with their kernel signatures, shapes and design spaces."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        data = [wl.describe() for wl in workloads.all_workloads()]
        if opts["json"]:
            self.stdout.write(json.dumps({"workloads": data}))
            return
        for d in data:
            self.stdout.write(self.style.MIGRATE_HEADING(f"{d['name']}") + f" — {d['description']}")
            self.stdout.write(f"  tolerance: {d['tolerance']}; distributions: {', '.join(d['distributions'])}")
            self.stdout.write(f"  shapes: typical {', '.join(d['shapes']['typical'])}; awkward "
                              f"{', '.join(d['shapes']['awkward'])}; minimal {', '.join(d['shapes']['minimal'])}")
            for tname, t in d["targets"].items():
                self.stdout.write(f"  [{tname}] {t['signature']}")
                self.stdout.write(f"      variants: {', '.join(t['variants'])}; space size {t['space_size']}")
                for p in t["space"]["params"]:
                    rng = (f"{p['low']}..{p['high']}" if p["kind"] == "int" else
                           "0/1" if p["kind"] == "bool" else "/".join(map(str, p.get("choices", []))))
                    self.stdout.write(f"      {p['name']:<10} {p['kind']:<8} {rng:<22} {p.get('help', '')}")
                for c in t["space"]["constraints"]:
                    self.stdout.write(f"      constraint: {c['expr']}  ({c['message']})")
            self.stdout.write(f"  baselines: {', '.join(d['baselines'])}\n")

