"""PAI Portal settings: one file, every knob an environment variable with a safe default.

The README's "Environment variables" table lists each variable read here.
"""

import os
import secrets
from pathlib import Path

import dj_database_url


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PAI_VAR_DIR", BASE_DIR / "var")).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """SECRET_KEY from the environment, else one generated once and kept in var/."""
    if os.environ.get("SECRET_KEY"):
        return os.environ["SECRET_KEY"]
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(64))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("PAI_DEBUG")
# Production switches HTTPS-only cookies, HSTS and the SSL redirect on (check --deploy is clean).
PRODUCTION = env_bool("PAI_PRODUCTION")
ALLOWED_HOSTS = env_list("PAI_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("PAI_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",  # first, so runserver serves websockets too
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "clusters",
    "jobs",
    "accounts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "pai_portal.middleware.PortalLoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "pai_portal.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "pai_portal.wsgi.application"
ASGI_APPLICATION = "pai_portal.asgi.application"

# Database: SQLite in var/ by default; DATABASE_URL (postgres://...) switches to PostgreSQL.
if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("PAI_SQLITE_PATH", str(VAR_DIR / "db.sqlite3")),
            # A file, not memory, so that tests can run a scheduler in a subprocess on the same
            # database; one per test process so that parallel runs do not collide.
            "TEST": {"NAME": str(VAR_DIR / f"test-db-{os.getpid()}.sqlite3")},
            # Keep connections: opening one costs the WAL pragmas (the scheduler passes often).
            "CONN_MAX_AGE": 600,
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": {
                # The portal and the scheduler write at the same time: WAL lets readers go on,
                # IMMEDIATE takes the write lock up front instead of failing on upgrade.
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = os.environ.get("PAI_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG

# Uploads (import file, code/data upload) are size-limited.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("PAI_MAX_BODY_BYTES", 2 * 1024 * 1024))
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

# Where the portal keeps its own files.
PAI_LOG_DIR = Path(os.environ.get("PAI_LOG_DIR", VAR_DIR / "logs"))
PAI_WORK_ROOT = Path(os.environ.get("PAI_WORK_ROOT", VAR_DIR / "work"))
PAI_FS_ROOT = Path(os.environ.get("PAI_FS_ROOT", VAR_DIR / "fs"))
# The storage page refuses uploads bigger than this (bytes).
PAI_FS_UPLOAD_MAX_BYTES = int(os.environ.get("PAI_FS_UPLOAD_MAX_BYTES", 200 * 1024 * 1024))
PAI_DEFAULT_IMAGE = os.environ.get("PAI_DEFAULT_IMAGE", "pai-portal/base:latest")
PAI_SCHEDULER_INTERVAL = float(os.environ.get("PAI_SCHEDULER_INTERVAL", "0.5"))

# Channels: in-memory by default, Redis when REDIS_URL is set.
if os.environ.get("REDIS_URL"):
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [os.environ["REDIS_URL"]]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Bearer first: its challenge makes a missing credential a 401, not a 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "jobs.api.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["jobs.api.parsers.LimitedJSONParser", "jobs.api.parsers.LimitedFormParser"],
    "EXCEPTION_HANDLER": "jobs.api.errors.openpai_exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "submit": os.environ.get("PAI_API_SUBMIT_RATE", "120/min"),
        "list": os.environ.get("PAI_API_LIST_RATE", "600/min"),
        "login": os.environ.get("PAI_API_LOGIN_RATE", "30/min"),
    },
}
# API tokens (accounts.Token): lifetimes, the v2 job list's `limit` cap, the SSH key link's life.
PAI_API_LOGIN_TOKEN_SECONDS = int(os.environ.get("PAI_API_LOGIN_TOKEN_SECONDS", 7 * 24 * 3600))
PAI_API_APP_TOKEN_SECONDS = int(os.environ.get("PAI_API_APP_TOKEN_SECONDS", 365 * 24 * 3600))
PAI_API_MAX_LIST_LIMIT = int(os.environ.get("PAI_API_MAX_LIST_LIMIT", 50000))
PAI_API_SSH_KEY_LINK_SECONDS = int(os.environ.get("PAI_API_SSH_KEY_LINK_SECONDS", 300))
SPECTACULAR_SETTINGS = {
    "TITLE": "PAI Portal API",
    "DESCRIPTION": "OpenPAI-compatible REST API for submitting and watching deep-learning jobs.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the job pages' small scripts read it for POSTs
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("PAI_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("PAI_HSTS_SECONDS", 31536000))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("PAI_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# --- Isolation: what a user's job may take and see (README "Security model") ------------------
# Everything the portal writes (database, logs, secret key, storage areas, work dirs) is its own:
# 0600 files and 0700 directories; files made before this rule lose their group/other bits here.
os.umask(0o077)
_private_paths = [VAR_DIR, VAR_DIR / "secret_key", PAI_LOG_DIR, PAI_WORK_ROOT, PAI_FS_ROOT]
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    _private_paths.append(Path(DATABASES["default"]["NAME"]))
for _path in _private_paths:
    if _path.exists() and _path.stat().st_uid == os.geteuid():
        _path.chmod(_path.stat().st_mode & 0o7711)  # x stays: the sandbox passes through var/ (no listing)
# A task's log keeps at most this many bytes: past it the oldest output goes (the page says so).
PAI_TASK_LOG_MAX_BYTES = int(os.environ.get("PAI_TASK_LOG_MAX_BYTES", 64 * 1024 * 1024))
# Processes (and threads) one task may have, on Docker and process nodes alike.
PAI_TASK_PIDS_LIMIT = int(os.environ.get("PAI_TASK_PIDS_LIMIT", 4096))
# A portal running as root runs each user's process-node tasks as uid/gid PAI_SANDBOX_BASE_ID + user id.
PAI_SANDBOX_BASE_ID = int(os.environ.get("PAI_SANDBOX_BASE_ID", 2_000_000))
# The address `addnode --local` gives this machine's node: tasks' ports are opened there, never on
# the portal's own host name (cookies ignore ports), so it must not be one of PAI_ALLOWED_HOSTS.
PAI_LOCAL_NODE_ADDRESS = os.environ.get("PAI_LOCAL_NODE_ADDRESS", "127.0.0.2")
