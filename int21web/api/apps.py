from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API (django-ninja) at /api/: the pages' actions for scripts and tools, with
    session or token auth and the same roles as the pages."""

    name = "int21web.api"
    label = "api"
    verbose_name = "REST API"
    default_auto_field = "django.db.models.BigAutoField"
