"""python manage.py guide RUN_ID [--pin NAME=V] [--forbid NAME=V] [--narrow NAME=V1,V2]
[--favour AGENT] [--mute AGENT] [--target-speedup X] [--stop] [--note TEXT] [--pause|--resume]"""
from django.core.management.base import BaseCommand, CommandError

from int21web.runs import models as m
from int21web.runs import services
from swarm.guidance import GuidanceError


def _value(text: str):
    try:
        return int(text)
    except ValueError:
        return text


def _pair(text: str, flag: str):
    name, sep, value = text.partition("=")
    if not sep:
        raise CommandError(f"{flag} {text!r}: expected NAME=VALUE", returncode=2)
    return name, value


class Command(BaseCommand):
    help = "Steer a run: directives take effect at its next generation and are recorded with the author."

    def add_arguments(self, parser):
        parser.add_argument("run_id", type=int)
        parser.add_argument("--pin", action="append", default=[], metavar="NAME=VALUE")
        parser.add_argument("--forbid", action="append", default=[], metavar="NAME=VALUE")
        parser.add_argument("--narrow", action="append", default=[], metavar="NAME=V1,V2")
        parser.add_argument("--favour", action="append", default=[], metavar="AGENT")
        parser.add_argument("--mute", action="append", default=[], metavar="AGENT")
        parser.add_argument("--target-speedup", type=float)
        parser.add_argument("--stop", action="store_true")
        parser.add_argument("--note")
        parser.add_argument("--pause", action="store_true")
        parser.add_argument("--resume", action="store_true")
        parser.add_argument("--author", default="cli")

    def handle(self, *args, **o):
        rid = o["run_id"]
        if not m.Run.objects.filter(pk=rid).exists():
            raise CommandError(f"no run {rid}", returncode=2)
        directives = []
        for text in o["pin"]:
            name, value = _pair(text, "--pin")
            directives.append({"op": "pin", "param": name, "value": _value(value)})
        for text in o["forbid"]:
            name, value = _pair(text, "--forbid")
            directives.append({"op": "forbid", "param": name, "value": _value(value)})
        for text in o["narrow"]:
            name, values = _pair(text, "--narrow")
            directives.append({"op": "narrow", "param": name, "values": [_value(v) for v in values.split(",")]})
        directives += [{"op": "favour", "agent": a} for a in o["favour"]]
        directives += [{"op": "mute", "agent": a} for a in o["mute"]]
        if o["target_speedup"] is not None:
            directives.append({"op": "target", "speedup": o["target_speedup"]})
        if o["note"]:
            directives.append({"op": "note", "text": o["note"]})
        if o["stop"]:
            directives.append({"op": "stop"})
        if not directives and not (o["pause"] or o["resume"]):
            raise CommandError("nothing to do: give a directive, --pause or --resume", returncode=2)
        for d in directives:
            try:
                g = services.guidance_post(run_id=rid, directive=d, author_name=o["author"])
            except GuidanceError as exc:
                raise CommandError(f"{d['op']}: {exc}", returncode=2)
            self.stdout.write(f"guidance #{g.id} recorded: {d}")
        if o["pause"]:
            services.run_pause(run_id=rid, reason=f"paused by {o['author']}")
            self.stdout.write(f"run {rid} paused")
        if o["resume"]:
            services.run_resume(run_id=rid, reason=f"resumed by {o['author']}")
            self.stdout.write(f"run {rid} resumed (drive it with: manage.py swarm --resume {rid})")
