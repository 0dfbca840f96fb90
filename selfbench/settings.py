"""SelfBench settings: one file, everything from the environment.

With nothing set this is the embedded default: SQLite, the django-q2 ORM broker and a local media folder.
Production differs only by environment variables (listed in `.env.example`).
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from exc


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required unless DEBUG=true")
    SECRET_KEY = "insecure-dev-only-secret-key-do-not-use-in-production"

# Secrets at rest (credentials) are encrypted with this key, never with SECRET_KEY, so rotating one does not
# touch the other. Comma-separated: the first encrypts, all decrypt (rotation).
SECRETS_ENCRYPTION_KEYS = env_list("SECRETS_ENCRYPTION_KEYS")
if not SECRETS_ENCRYPTION_KEYS:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRETS_ENCRYPTION_KEYS is required unless DEBUG=true "
            "(generate one: python -c 'import secrets;print(secrets.token_urlsafe(32))')"
        )
    SECRETS_ENCRYPTION_KEYS = ["insecure-dev-only-encryption-key"]

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "django_q",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "apps.accounts",
    "apps.repositories",
    "apps.tasks",
    "apps.harnesses",
    "apps.ablations",
    "apps.runs",
    "apps.results",
    "apps.gateway",
    "apps.authoring",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "selfbench.urls"
WSGI_APPLICATION = "selfbench.wsgi.application"
ASGI_APPLICATION = "selfbench.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.accounts.context.workspace_nav",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"), conn_max_age=env_int("DB_CONN_MAX_AGE", 0)
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The ORM broker and the web process share the file: wait for locks instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:home"
LOGOUT_REDIRECT_URL = "accounts:login"
SESSION_COOKIE_NAME = "selfbench_session"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(BASE_DIR / "media")))
MEDIA_URL = "/media/"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if env_bool("DJANGO_STATIC_MANIFEST", False)
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.auth.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apps.accounts.auth.WorkspaceAccess"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "selfbench.api.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "SelfBench API",
    "DESCRIPTION": "Private coding-agent benchmarks from your repository's merged pull requests.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

# A cache every process shares (the worker's heartbeat lives there, so `doctor` can see it): the database by
# default, Redis when REDIS_URL is set.
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": env_str("REDIS_URL")}
        if env_str("REDIS_URL")
        else {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "selfbench_cache"}
    )
}

# django-q2: the ORM broker by default (the database is the queue); Redis when REDIS_URL is set.
Q_CLUSTER: dict[str, object] = {
    "name": "selfbench",
    "workers": env_int("Q_WORKERS", 2),
    "timeout": env_int("Q_TIMEOUT", 3 * 3600),
    "retry": env_int("Q_RETRY", 3 * 3600 + 600),
    "max_attempts": env_int("Q_MAX_ATTEMPTS", 1),
    "catch_up": False,
    "ack_failures": True,
    "save_limit": 1000,
}
if env_str("REDIS_URL"):
    Q_CLUSTER["redis"] = env_str("REDIS_URL")
else:
    Q_CLUSTER["orm"] = "default"

# Containers and Harbor.
SANDBOX_ENVIRONMENT = env_str("SANDBOX_ENVIRONMENT", "podman")
BASE_IMAGE = env_str("BASE_IMAGE", "localhost/selfbench-base:bookworm")
HARBOR_TRIALS_DIR = Path(env_str("HARBOR_TRIALS_DIR", str(MEDIA_ROOT / "trials")))
# Harness skills: where `org/repo` shorthands clone from; repo ablations: when a `building` build counts as lost.
HARNESS_SKILLS_GITHUB_URL = env_str("HARNESS_SKILLS_GITHUB_URL", "https://github.com")
ABLATIONS_BUILD_STALE_SECONDS = env_int("ABLATIONS_BUILD_STALE_SECONDS", 3 * 3600)

# Where sandboxes and the terminus-2 loop reach the gateway.
GATEWAY_PUBLIC_URL = env_str("GATEWAY_PUBLIC_URL", "http://127.0.0.1:8000/gateway")

# The deployment's own provider keys (managed-model). Empty means managed-model is unavailable.
MANAGED_OPENAI_API_KEY = env_str("MANAGED_OPENAI_API_KEY")
MANAGED_ANTHROPIC_API_KEY = env_str("MANAGED_ANTHROPIC_API_KEY")
MANAGED_OPENROUTER_API_KEY = env_str("MANAGED_OPENROUTER_API_KEY")
# Provider base URLs (tests point these at the scripted upstream).
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "https://api.openai.com")
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
OPENROUTER_BASE_URL = env_str("OPENROUTER_BASE_URL", "https://openrouter.ai/api")
GITHUB_API_URL = env_str("GITHUB_API_URL", "https://api.github.com")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

# Gateway: how long a trial key's lookup is cached per process (a revocation elsewhere takes effect within it),
# and how long an upstream may stay silent mid-call before the call fails as timed out.
GATEWAY_KEY_CACHE_SECONDS = env_int("GATEWAY_KEY_CACHE_SECONDS", 5)
GATEWAY_UPSTREAM_READ_TIMEOUT_SECONDS = env_int("GATEWAY_UPSTREAM_READ_TIMEOUT_SECONDS", 600)

# Repositories: GitHub retries and rate-limit waits, bot authors skipped by provenance, the size gate's ceiling.
GITHUB_RETRIES = env_int("GITHUB_RETRIES", 3)
GITHUB_RETRY_BACKOFF = env_float("GITHUB_RETRY_BACKOFF", 1.0)
GITHUB_RATE_LIMIT_INLINE_WAIT = env_int("GITHUB_RATE_LIMIT_INLINE_WAIT", 300)
GITHUB_MAX_LIST_PAGES = env_int("GITHUB_MAX_LIST_PAGES", 30)
REPOSITORIES_BOT_AUTHORS = env_list(
    "REPOSITORIES_BOT_AUTHORS",
    ["dependabot", "renovate", "github-actions", "greenkeeper", "snyk-bot", "pre-commit-ci"],
)
REPOSITORIES_MAX_DIFF_LINES = env_int("REPOSITORIES_MAX_DIFF_LINES", 3000)
REPOSITORIES_MAX_DIFF_FILES = env_int("REPOSITORIES_MAX_DIFF_FILES", 100)

# Results: the public results API's per-IP rate limit (token bucket: a steady rate and a burst) and snapshot time;
# registry grants' default and longest lifetime, their HMAC key (SECRET_KEY when empty) and the image build limit.
PUBLIC_RESULTS_RATE_PER_MINUTE = env_int("PUBLIC_RESULTS_RATE_PER_MINUTE", 300)
PUBLIC_RESULTS_BURST = env_int("PUBLIC_RESULTS_BURST", 60)
PUBLIC_RESULTS_SNAPSHOT_SECONDS = env_int("PUBLIC_RESULTS_SNAPSHOT_SECONDS", 5)
REGISTRY_GRANT_TTL_SECONDS = env_int("REGISTRY_GRANT_TTL_SECONDS", 3 * 3600)
REGISTRY_GRANT_MAX_TTL_SECONDS = env_int("REGISTRY_GRANT_MAX_TTL_SECONDS", 7 * 24 * 3600)
REGISTRY_GRANT_KEY = env_str("REGISTRY_GRANT_KEY")
REGISTRY_BUILD_TIMEOUT_SECONDS = env_int("REGISTRY_BUILD_TIMEOUT_SECONDS", 900)
# A grant build claimed longer ago than this is lost (its worker died) and a retried job may take it over; the default
# is the worker's job timeout, after which django-q2 has killed the job anyway.
REGISTRY_GRANT_BUILD_STALE_SECONDS = env_int("REGISTRY_GRANT_BUILD_STALE_SECONDS", env_int("Q_TIMEOUT", 3 * 3600))

# Tasks: how many times the determinism gate reruns the selected tests after the oracle (N >= 1).
TASKS_DETERMINISM_RUNS = env_int("TASKS_DETERMINISM_RUNS", 3)
# How often a running gate looks for a cancel of its task or candidate, and how long a cancelled gate waits for its
# Harbor run to wind down before leaving it to end in the background.
TASKS_CANCEL_POLL_SECONDS = env_float("TASKS_CANCEL_POLL_SECONDS", 2.0)
TASKS_CANCEL_GRACE_SECONDS = env_float("TASKS_CANCEL_GRACE_SECONDS", 30.0)
