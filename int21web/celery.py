"""The Celery app. Embedded mode (no REDIS_URL): in-process `memory://` broker and a worker
thread started by the process that needs one (``int21web.runs.embedded``). Production:
Redis, and `celery -A int21web worker -Q target.cpu` (or target.cuda) per host."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "int21web.settings")

app = Celery("int21web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
