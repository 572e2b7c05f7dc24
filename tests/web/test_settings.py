"""Settings come from the environment and fail loudly on bad values."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def manage(*args, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS")}
    full.update(env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=120)


def test_debug_must_be_true_or_false():
    result = manage("check", DEBUG="maybe")
    assert result.returncode != 0 and "DEBUG must be true or false" in result.stderr


def test_production_mode_requires_a_secret_key():
    result = manage("check", DEBUG="false", ALLOWED_HOSTS="factory.example")
    assert result.returncode != 0 and "SECRET_KEY must be set" in result.stderr


def test_deploy_checks_pass_with_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", DEBUG="false",
                    SECRET_KEY="x" * 64 + "-production-secret-for-the-deploy-check",
                    ALLOWED_HOSTS="factory.example,10.0.0.5")
    assert result.returncode == 0, result.stdout + result.stderr


def test_database_url_switches_to_postgresql():
    code = "from django.conf import settings; print(settings.DATABASES['default']['ENGINE'])"
    setup = "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE','int21web.settings'); django.setup()"
    out = subprocess.run([sys.executable, "-c", f"{setup}; {code}"],
                         cwd=ROOT, env={**os.environ, "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/test"},
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "django.db.backends.postgresql", out.stderr


def test_a_bad_database_url_is_a_clear_error():
    result = manage("check", DATABASE_URL="nonsense://")
    assert result.returncode != 0 and "DATABASE_URL" in result.stderr
