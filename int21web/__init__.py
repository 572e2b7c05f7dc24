"""The Django side of the INT21 Kernel Factory: settings, web app, Celery adapters."""
