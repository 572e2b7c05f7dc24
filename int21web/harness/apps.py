import os

from django.apps import AppConfig
from django.conf import settings


class HarnessConfig(AppConfig):
    """Django's adapter for the framework-free kernel harness (kernels/)."""

    name = "int21web.harness"
    label = "harness"
    verbose_name = "Kernel harness"

    def ready(self):
        # The harness reads its cache location from the environment (it knows no Django).
        os.environ.setdefault("INT21_CACHE_DIR", settings.INT21_CACHE_DIR)
