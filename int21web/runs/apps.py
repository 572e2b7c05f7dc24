from django.apps import AppConfig


class RunsConfig(AppConfig):
    """Goals, runs, generations, candidates, evaluations, lessons, guidance and events:
    the Django side of the swarm (swarm/ stays framework-free; this app adapts it)."""

    name = "int21web.runs"
    label = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from int21web.runs import live
        live.install()
        from int21web.runs import recovery
        recovery.connect()
