from django.apps import AppConfig


class FleetConfig(AppConfig):
    """The worker registry: Celery workers announce their queues, targets and host fingerprint
    when they start, heartbeat while they live, and say goodbye when they stop."""

    name = "int21web.fleet"
    label = "fleet"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from int21web.fleet import worker
        worker.connect()
