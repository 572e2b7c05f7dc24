"""Settings come from the environment (see docs/ARCHITECTURE.md, "Configuration").

Embedded defaults (no variables set): DEBUG on, a SQLite file under var/, everything
in-process. DATABASE_URL switches to PostgreSQL (psycopg 3). DEBUG=false requires
SECRET_KEY and ALLOWED_HOSTS and turns on the secure-cookie/HSTS/SSL settings.
"""
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from int21web.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("INT21_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", True)
EMBEDDED = DEBUG  # demo accounts and in-process services exist only in embedded mode

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG=false")
    SECRET_KEY = "int21-embedded-mode-only-not-a-secret"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DEBUG=false (comma-separated)")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "ninja",  # the API docs page then uses ninja's bundled Swagger UI files, not a CDN
    "int21web.accounts",
    "int21web.harness",
    "int21web.runs",
    "int21web.fleet",
    "int21web.library",
    "int21web.ops",
    "int21web.api",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "int21web.api.middleware.JsonApiErrors",
    "int21web.middleware.RefuseNul",
]

ROOT_URLCONF = "int21web.urls"
WSGI_APPLICATION = "int21web.wsgi.application"
ASGI_APPLICATION = "int21web.asgi.application"

TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [BASE_DIR / "templates"],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
        "int21web.accounts.context.roles",
    ]},
}]

_db_url = env_str("DATABASE_URL")
if _db_url:
    try:
        DATABASES = {"default": dj_database_url.parse(_db_url, conn_max_age=0)}
    except Exception as exc:  # dj_database_url raises several types for a bad URL
        raise ImproperlyConfigured(f"DATABASE_URL is not a usable database URL: {exc}") from None
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = env_bool("DATABASE_POOL", True)
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # WAL and IMMEDIATE transactions: the embedded worker thread writes while pages read.
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "db.sqlite3",
                             "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE",
                                         "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}}}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [] if DEBUG else [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

STATIC_URL = "static/"
# plotly.js is served from the pinned plotly package itself (no CDN, no second copy in git).
import plotly as _plotly  # noqa: E402

STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", Path(_plotly.__file__).parent / "package_data")]
STATIC_ROOT = Path(env_str("INT21_STATIC_ROOT", str(VAR_DIR / "static")))   # `manage.py collectstatic` fills it

if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Hashed, compressed static files served by WhiteNoise (run `manage.py collectstatic` first);
    # embedded mode serves them from the app folders instead (asgi.py).
    MIDDLEWARE.insert(MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
                      "whitenoise.middleware.WhiteNoiseMiddleware")
    STORAGES = {"default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
                "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}}

# The harness: where compiled kernels and measured host ceilings are cached.
INT21_CACHE_DIR = env_str("INT21_CACHE_DIR", str(VAR_DIR / "cache"))

# Language models for the LLM agents (docs/agents.md): swarm/llm/config.py reads LLM_* itself
# where runs are driven; a bad value stops start-up here too, with the variable named.
from swarm.llm.config import LLMConfigError as _LLMConfigError, NotConfigured as _LLMNotConfigured  # noqa: E402
from swarm.llm.config import from_env as _llm_from_env  # noqa: E402

try:
    _llm_from_env()
except _LLMNotConfigured:
    pass
except _LLMConfigError as _exc:
    raise ImproperlyConfigured(str(_exc)) from None
# Promoted kernels on disk, read by kernels.library.load (share it between web and workers).
INT21_LIBRARY_DIR = env_str("INT21_LIBRARY_DIR", str(VAR_DIR / "library"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "celery": {"level": "WARNING"},
        "kombu": {"level": "WARNING"},
        "optuna": {"level": "WARNING"},
    },
}

# Live updates: the channel layer wakes each run's websocket consumers; the events themselves
# are read from the database, so a lost wake-up delays a row but never loses it.
# Embedded: in-memory layer, sends scheduled onto the server's event loop (int21web.runs.live).
# INT21_REDIS_PREFIX: a prefix for every Redis key (broker, layer, cache): stacks that share a Redis
# (parallel test runs, staging beside production) then never see each other's messages.
REDIS_PREFIX = env_str("INT21_REDIS_PREFIX", "")
if REDIS_URL := env_str("REDIS_URL"):
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                  # channels_redis blocks 5 s per read; redis-py 8 times sockets out after 5 s
                                  # unless told otherwise, which broke every idle websocket.
                                  "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
                                             "prefix": f"{REDIS_PREFIX}asgi"}}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": REDIS_PREFIX}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Celery: JSON only (no pickle anywhere). Without REDIS_URL the broker is in-process.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL or "memory://localhost/")
CELERY_EMBEDDED = CELERY_BROKER_URL.startswith("memory://")
# An unacknowledged message goes back to its queue after this long: it must exceed the hard time
# limit, or a long evaluation would be handed to a second worker while the first still runs it.
CELERY_BROKER_VISIBILITY_TIMEOUT = env_int("INT21_BROKER_VISIBILITY_TIMEOUT", 3900)
if CELERY_EMBEDDED:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"polling_interval": 0.01}
elif CELERY_BROKER_URL.startswith("filesystem://"):   # a host without Redis (docs/deploy.md, the GPU check)
    _broker_dir = VAR_DIR / "broker"
    for _sub in ("in", "processed"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(_broker_dir / "in"), "data_folder_out": str(_broker_dir / "in"),
                                       "processed_folder": str(_broker_dir / "processed"), "polling_interval": 0.05}
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_BROKER_VISIBILITY_TIMEOUT,
                                       "socket_timeout": 10, "socket_connect_timeout": 5,
                                       **({"global_keyprefix": REDIS_PREFIX} if REDIS_PREFIX else {})}
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("INT21_EVAL_SOFT_LIMIT", 1800)
CELERY_TASK_TIME_LIMIT = env_int("INT21_EVAL_HARD_LIMIT", 2400)
CELERY_TASK_DEFAULT_QUEUE = "orchestrate"
if not 0 < CELERY_TASK_SOFT_TIME_LIMIT < CELERY_TASK_TIME_LIMIT < CELERY_BROKER_VISIBILITY_TIMEOUT:
    raise ImproperlyConfigured(
        "time limits must satisfy INT21_EVAL_SOFT_LIMIT < INT21_EVAL_HARD_LIMIT < INT21_BROKER_VISIBILITY_TIMEOUT, got "
        f"{CELERY_TASK_SOFT_TIME_LIMIT} / {CELERY_TASK_TIME_LIMIT} / {CELERY_BROKER_VISIBILITY_TIMEOUT}")
# Evaluations are routed per call to target.<name>; the drivers of runs to their own queue, so a
# backlog of evaluations never holds up orchestration.
CELERY_TASK_ROUTES = {"runs.drive_run": {"queue": "orchestrate"}}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None          # a worker waits for Redis to come back, however long
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False   # evaluations in flight finish

# Delivery and orchestration (runs.delivery, runs.lease, fleet): seconds.
INT21_EVAL_HEARTBEAT_SECONDS = env_float("INT21_EVAL_HEARTBEAT", 5.0)     # an evaluating process beats
INT21_EVAL_STALE_SECONDS = env_float("INT21_EVAL_STALE", 30.0)           # then its attempt is re-queued
INT21_REMEASURE_TIMEOUT_SECONDS = env_float("INT21_REMEASURE_TIMEOUT", 300.0)  # a confirming round waits this long
INT21_DRIVE_LEASE_SECONDS = env_float("INT21_DRIVE_LEASE", 60.0)         # a dead driver's run is free after
INT21_DRIVE_SLICE_SECONDS = env_float("INT21_DRIVE_SLICE", 600.0)        # a drive_run hands over after
INT21_JOB_POLL_SECONDS = env_float("INT21_JOB_POLL", 3.0)             # an engine job looks at its runs again after
INT21_DRIVE_MAX_DEATHS = env_int("INT21_DRIVE_MAX_DEATHS", 3)            # drivers dead in one generation: failed
INT21_RECOVER_SECONDS = env_float("INT21_RECOVER_EVERY", 30.0)           # orchestrate workers look for undriven runs
# A worker beats every 2 s and is shown dead (stale) after 3 missed beats: seconds, not a minute.
INT21_WORKER_HEARTBEAT_SECONDS = env_float("INT21_WORKER_HEARTBEAT", 2.0)
INT21_WORKER_STALE_SECONDS = env_float("INT21_WORKER_STALE", 7.0)
# Embedded mode: how often a stopped embedded worker is noticed and started again.
INT21_EMBEDDED_CHECK_SECONDS = env_float("INT21_EMBEDDED_CHECK", 2.0)
if not INT21_EVAL_HEARTBEAT_SECONDS < INT21_EVAL_STALE_SECONDS:
    raise ImproperlyConfigured("INT21_EVAL_HEARTBEAT must be shorter than INT21_EVAL_STALE")
if not 0 < 2 * INT21_WORKER_HEARTBEAT_SECONDS < INT21_WORKER_STALE_SECONDS:
    raise ImproperlyConfigured("INT21_WORKER_STALE must be more than two INT21_WORKER_HEARTBEAT periods, got "
                               f"{INT21_WORKER_HEARTBEAT_SECONDS:g} / {INT21_WORKER_STALE_SECONDS:g}")
if not INT21_DRIVE_SLICE_SECONDS < CELERY_TASK_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured("INT21_DRIVE_SLICE must be shorter than INT21_EVAL_SOFT_LIMIT")
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
