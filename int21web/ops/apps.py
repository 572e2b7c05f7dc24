from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Own ops: a user's PyTorch problem (KernelBench format) imported as a workload. The work
    is kernels.graph's (sandboxed capture, IR, generated kernels); this app adapts it: the
    import page, the API and the commands, and each problem's page."""

    name = "int21web.ops"
    label = "ops"
    default_auto_field = "django.db.models.BigAutoField"
