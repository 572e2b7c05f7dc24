"""The ASGI application: Django for HTTP, Channels for the run websockets.

Served by uvicorn (`manage.py serve`, which `make run` calls). The lifespan hook records the
server's event loop so that embedded mode can publish live events onto it safely."""
import asyncio
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "int21web.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import path  # noqa: E402

from int21web.runs import live  # noqa: E402
from int21web.runs.consumers import RunConsumer  # noqa: E402


async def lifespan(scope, receive, send):
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            live.remember_server_loop(asyncio.get_running_loop())
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


websocket_urls = [path("ws/runs/<int:run_id>/", RunConsumer.as_asgi())]

from django.conf import settings  # noqa: E402

if settings.DEBUG:   # embedded mode serves /static/ itself; production puts a web server in front
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
    django_asgi = ASGIStaticFilesHandler(django_asgi)

application = ProtocolTypeRouter({
    "http": django_asgi,
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urls))),
    "lifespan": lifespan,
})
