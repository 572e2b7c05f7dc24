"""python manage.py serve [--host H] [--port P] — the web app under uvicorn.

Embedded mode (no broker configured): also starts the in-process Celery workers (one for the
target queues, one for orchestration) and hands runs that were running when the server last
stopped back to them. Ctrl-C stops the server, then the workers, cleanly."""
import asyncio
import os
import sys

from django.conf import settings
from django.core.management.base import BaseCommand

from int21web.runs import models as m
from int21web.runs import services
from int21web.runs.embedded import embedded_worker


class Command(BaseCommand):
    help = "Serve the web app (HTTP + websockets) with uvicorn; in embedded mode with its own workers."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-worker", action="store_true", help="do not start the embedded workers")

    def handle(self, *args, **o):
        import uvicorn
        config = uvicorn.Config("int21web.asgi:application", host=o["host"], port=o["port"], lifespan="on",
                                log_level=os.environ.get("UVICORN_LOG_LEVEL", "warning"), ws="websockets-sansio")
        server = uvicorn.Server(config)
        embedded = settings.CELERY_EMBEDDED and not o["no_worker"]
        with embedded_worker(orchestrate=True) if embedded else _nothing():
            if embedded:
                for run_id in m.Run.objects.filter(state="running").values_list("id", flat=True):
                    services.run_dispatch(run_id=run_id)   # interrupted by the last stop: carry on
                from int21web.ops.jobs import resume_active
                resume_active()                            # engine jobs too, from the step they were on
            self.stdout.write(f"INT21 Kernel Factory at http://{o['host']}:{o['port']}/ "
                              f"({'embedded workers' if embedded else 'workers: separate processes'}; "
                              f"Ctrl-C stops it)")
            sys.stdout.flush()
            try:
                server.run()
            except (KeyboardInterrupt, asyncio.CancelledError):
                pass   # uvicorn re-raises Ctrl-C after its own clean shutdown; the workers stop next
        self.stdout.write("stopped")


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
