"""PAI Portal settings: one file, every knob an environment variable with a safe default.

docs/gen/environment.md describes each variable read here (`make docs` fails on one it lacks).
"""

import os
import secrets
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from pai_portal.env import env_bool, env_choices, env_float, env_int, env_list, env_networks, env_path, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = env_path("PAI_VAR_DIR", BASE_DIR / "var").resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """SECRET_KEY from the environment, else one generated once and kept in var/."""
    if env_str("SECRET_KEY", ""):
        return env_str("SECRET_KEY", "")
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
# Reverse proxies whose X-Forwarded-For names the client (throttles); none: the header is ignored.
PAI_TRUSTED_PROXIES = env_networks("PAI_TRUSTED_PROXIES")

INSTALLED_APPS = [
    "pai_portal.runserver_app.DaphneRunserverConfig",  # daphne, first: runserver serves websockets too
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "clusters",
    "jobs",
    "scheduling",
    "accounts",
    "web",  # the pages, API and web terminal, above the apps it reads
]

MIDDLEWARE = [
    "pai_portal.middleware.BodyTooLargeMiddleware",  # first: before anything reads the body
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "corsheaders.middleware.CorsMiddleware",  # before CommonMiddleware, so preflights get their headers
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
                "web.help.sections.help_link",
            ],
        },
    },
]

WSGI_APPLICATION = "pai_portal.wsgi.application"
ASGI_APPLICATION = "pai_portal.asgi.application"

# Database: SQLite in var/ by default; DATABASE_URL (postgres://...) switches to PostgreSQL.
DATABASE_URL = env_str("DATABASE_URL", "")
if DATABASE_URL:
    # Health checks: a connection a reaper, pooler restart or failover closed while idle is noticed
    # (and opened again) before a request or pass uses it, instead of failing its first query.
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    DATABASES = {
        "default": {
            # Django's, with write transactions waiting in line instead of polling (pai_portal/gated_sqlite3).
            "ENGINE": "pai_portal.gated_sqlite3",
            "NAME": str(env_path("PAI_SQLITE_PATH", VAR_DIR / "db.sqlite3")),
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

# Sign-in (docs/admin/sign-in.md). Local accounts (Django's
# passwords) beside a directory unless PAI_LOCAL_ACCOUNTS=false. The LDAP settings are read in
# accounts/ldap.py; the OpenID Connect ones are below (accounts/oidc.py uses them).
PAI_LOCAL_ACCOUNTS = env_bool("PAI_LOCAL_ACCOUNTS", True)
PAI_LDAP_URI = env_str("PAI_LDAP_URI", "")
PAI_OIDC_ISSUER = env_str("PAI_OIDC_ISSUER", "").rstrip("/")
# The directory's group (LDAP cn, or a name in the OpenID groups claim) whose members are admins (the
# portal's `admingroup`); none by default: a directory group never makes admins unless named here.
PAI_DIRECTORY_ADMIN_GROUP = env_str("PAI_DIRECTORY_ADMIN_GROUP", "")
# Local passwords first: a directory that does not answer holds up only its own users' sign-in
# (a directory user has no usable local password, so the local check refuses them at once).
AUTHENTICATION_BACKENDS = [
    *(["django.contrib.auth.backends.ModelBackend"] if PAI_LOCAL_ACCOUNTS else []),
    *(["accounts.ldap.PortalLDAPBackend"] if PAI_LDAP_URI else []),
    *(["accounts.oidc.OidcBackend"] if PAI_OIDC_ISSUER else []),
]
if not AUTHENTICATION_BACKENDS:
    raise ImproperlyConfigured(
        "PAI_LOCAL_ACCOUNTS=false needs a directory to sign in with: set PAI_LDAP_URI or PAI_OIDC_ISSUER."
    )
# OpenID Connect (accounts/oidc.py): the client registered at the provider (its redirect URI is
# <PAI_PUBLIC_URL>/login/oidc/callback/), the scopes asked for, the claims naming the user and their
# groups (no username claim: the part of `email` before '@'), the button's label and the provider's
# name on the pages (default: the issuer's host), the addresses besides the portal's own that
# /api/v1/authn/oidc/login may send a new token to, and how long a call to the provider may take.
PAI_OIDC_CLIENT_ID = env_str("PAI_OIDC_CLIENT_ID", "")
PAI_OIDC_CLIENT_SECRET = env_str("PAI_OIDC_CLIENT_SECRET", "")
PAI_OIDC_SCOPES = env_str("PAI_OIDC_SCOPES", "openid email profile")
PAI_OIDC_USERNAME_CLAIM = env_str("PAI_OIDC_USERNAME_CLAIM", "preferred_username")
PAI_OIDC_GROUPS_CLAIM = env_str("PAI_OIDC_GROUPS_CLAIM", "groups")
PAI_OIDC_BUTTON = env_str("PAI_OIDC_BUTTON", "")
PAI_OIDC_NAME = env_str("PAI_OIDC_NAME", "")
PAI_OIDC_REDIRECT_URIS = env_list("PAI_OIDC_REDIRECT_URIS", "")
PAI_OIDC_TIMEOUT_SECONDS = env_float("PAI_OIDC_TIMEOUT_SECONDS", 10.0, minimum=0.5)
if PAI_OIDC_ISSUER and not PAI_OIDC_CLIENT_ID:
    raise ImproperlyConfigured("PAI_OIDC_ISSUER needs PAI_OIDC_CLIENT_ID (and PAI_OIDC_CLIENT_SECRET).")
if PAI_OIDC_ISSUER and "openid" not in PAI_OIDC_SCOPES.split():
    raise ImproperlyConfigured(f"PAI_OIDC_SCOPES={PAI_OIDC_SCOPES!r}: OpenID Connect needs the scope 'openid'.")
# LDAP (docs/admin/sign-in.md, "LDAP"): the portal binds as the user signing in (the DN template with their name),
# then reads their groups under the group base, as that user. accounts/ldap.py turns these into
# django-auth-ldap's AUTH_LDAP_* settings (an AUTH_LDAP_* set in a settings override still wins).
PAI_LDAP_USER_DN_TEMPLATE = env_str("PAI_LDAP_USER_DN_TEMPLATE", "")
PAI_LDAP_GROUP_SEARCH_BASE = env_str("PAI_LDAP_GROUP_SEARCH_BASE", "")
PAI_LDAP_GROUP_TYPE = env_str("PAI_LDAP_GROUP_TYPE", "groupOfNames")
PAI_LDAP_START_TLS = env_bool("PAI_LDAP_START_TLS", False)
PAI_LDAP_REQUIRE_GROUP = env_str("PAI_LDAP_REQUIRE_GROUP", "")
PAI_LDAP_TIMEOUT_SECONDS = env_float("PAI_LDAP_TIMEOUT_SECONDS", 5.0, minimum=0.1)
if PAI_LDAP_GROUP_TYPE not in ("groupOfNames", "groupOfUniqueNames", "posixGroup"):
    raise ImproperlyConfigured(
        f"PAI_LDAP_GROUP_TYPE={PAI_LDAP_GROUP_TYPE!r} is not one of groupOfNames, groupOfUniqueNames, posixGroup"
    )
if PAI_LDAP_URI and not PAI_LDAP_URI.startswith(("ldap://", "ldaps://", "ldapi://")):
    raise ImproperlyConfigured(f"PAI_LDAP_URI={PAI_LDAP_URI!r}: an ldap://, ldaps:// or ldapi:// address")
if PAI_LDAP_URI and "%(user)s" not in PAI_LDAP_USER_DN_TEMPLATE:
    raise ImproperlyConfigured(
        "PAI_LDAP_URI needs PAI_LDAP_USER_DN_TEMPLATE, with %(user)s for the user name, "
        'e.g. "uid=%(user)s,ou=people,dc=example,dc=org"'
    )
if PAI_LDAP_REQUIRE_GROUP and not PAI_LDAP_GROUP_SEARCH_BASE:
    raise ImproperlyConfigured("PAI_LDAP_REQUIRE_GROUP needs PAI_LDAP_GROUP_SEARCH_BASE (where that group is)")

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/start/"  # admins land on the dashboard, users on the job list
LOGOUT_REDIRECT_URL = "/login/"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("PAI_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

# The documentation site `make docs` builds (mkdocs.yml), served at /docs/ (web/help).
DOCS_SITE_DIR = BASE_DIR / "site"

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG

# Uploads (import file, code/data upload) are size-limited.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("PAI_MAX_BODY_BYTES", 2 * 1024 * 1024, minimum=1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

# Where the portal keeps its own files.
PAI_LOG_DIR = env_path("PAI_LOG_DIR", VAR_DIR / "logs")
# The job page's log search reads the whole log and shows at most this many matching lines.
PAI_LOG_SEARCH_MAX_MATCHES = env_int("PAI_LOG_SEARCH_MAX_MATCHES", 1000, minimum=1)
PAI_WORK_ROOT = env_path("PAI_WORK_ROOT", VAR_DIR / "work")
PAI_FS_ROOT = env_path("PAI_FS_ROOT", VAR_DIR / "fs")
# The storage page refuses uploads bigger than this (bytes).
PAI_FS_UPLOAD_MAX_BYTES = env_int("PAI_FS_UPLOAD_MAX_BYTES", 200 * 1024 * 1024, minimum=1)
PAI_DEFAULT_IMAGE = env_str("PAI_DEFAULT_IMAGE", "pai-portal/base:latest")
# The image with Jupyter (make image-notebook): the form switches to it when Jupyter is ticked.
PAI_NOTEBOOK_IMAGE = env_str("PAI_NOTEBOOK_IMAGE", "pai-portal/notebook:latest")
# Registries (host[:port], IPv6 in brackets) on a loopback, link-local or the portal's own address
# that images may still name: otherwise refused at submit, as the node's engine would send requests
# there for the user (e.g. a registry the admin runs on the node itself: 127.0.0.1:5000).
PAI_ALLOWED_PRIVATE_REGISTRIES = env_list("PAI_ALLOWED_PRIVATE_REGISTRIES", "")
# As in OpenPAI, every signed-in user sees the job list and read-only job summaries (the queue is
# shared knowledge on a shared cluster); configs, logs, keys and terminals stay the owner's and admins'.
PAI_SHARED_JOB_LIST = env_bool("PAI_SHARED_JOB_LIST", True)

# The most task roles and tasks (all roles' instances) one job may have: OpenPAI's biggest examples
# use a few roles of at most tens of instances; 400,000 tasks held the database for 34 s.
PAI_MAX_TASK_ROLES = env_int("PAI_MAX_TASK_ROLES", 100, minimum=1)
PAI_MAX_TASKS_PER_JOB = env_int("PAI_MAX_TASKS_PER_JOB", 5000, minimum=1)

# The scheduler loop.
PAI_SCHEDULER_INTERVAL = env_float("PAI_SCHEDULER_INTERVAL", 0.5, minimum=0.01)
# The scheduler's lease (scheduling/lease.py): renewed every third of it; a standby on another
# machine takes over this long after the active one stopped renewing, plus one idle interval: 6 s
# keeps a takeover under 10 s, and leaves a pass 4 s before a slow one lets the standby in too.
PAI_SCHEDULER_LEASE_SECONDS = env_float("PAI_SCHEDULER_LEASE_SECONDS", 6.0, minimum=1.0)
# This machine's name in the leases (default: its host name). Processes given different names are
# different machines' (a standby started beside the active one, as tests and bench/chaos.py do):
# neither takes the other's lease at once when its process has ended.
PAI_MACHINE_NAME = env_str("PAI_MACHINE_NAME", "")
# Transient failures are retried without charging the user, but not forever.
PAI_MAX_TRANSIENT_RETRIES = env_int("PAI_MAX_TRANSIENT_RETRIES", 5, minimum=0)
# A stopped or preempted job's tasks get SIGTERM, then this long (a job's own
# extras.gracePeriodSeconds, at most the cap) to save their work before SIGKILL.
PAI_GRACE_SECONDS = env_int("PAI_GRACE_SECONDS", 30, minimum=0)
PAI_MAX_GRACE_SECONDS = env_int("PAI_MAX_GRACE_SECONDS", 300, minimum=0)
# The most /dev/shm a task may ask for (extraContainerOptions.shmMB; it counts against its memory too).
PAI_MAX_SHM_MB = env_int("PAI_MAX_SHM_MB", 65536, minimum=1)
# Docker tasks' locked memory unlimited (RDMA), where the admin knows the engines may raise it.
PAI_DOCKER_UNLIMITED_MEMLOCK = env_bool("PAI_DOCKER_UNLIMITED_MEMLOCK", False)
# Borrowing (docs/admin/sharing.md, "Borrowing and reclaim"): every VC lends its idle quota (else only those the
# admin marks), and the priority classes whose jobs may borrow it (OpenPAI's `oppo` always may).
PAI_LEND_IDLE_QUOTA = env_bool("PAI_LEND_IDLE_QUOTA", False)
PAI_BORROWING_CLASSES = sorted(
    {"oppo", *env_choices("PAI_BORROWING_CLASSES", "oppo", ("crit", "prod", "test", "oppo"))}
)
# Fair share (a VC whose queue is fair-share): recent usage halves every this many hours (Slurm's
# PriorityDecayHalfLife, 7 days there too).
PAI_FAIR_SHARE_HALF_LIFE_HOURS = env_float("PAI_FAIR_SHARE_HALF_LIFE_HOURS", 168.0, minimum=0.01)
# Containers of one job started at once (the engine serializes little of container start).
PAI_MAX_PARALLEL_STARTS = env_int("PAI_MAX_PARALLEL_STARTS", 8, minimum=1)
# Node heartbeat: how often the scheduler pings each node's engine, and how long a node may stay
# silent before it is marked down (its running tasks lost and retried elsewhere).
PAI_NODE_HEARTBEAT_SECONDS = env_float("PAI_NODE_HEARTBEAT_SECONDS", 5.0, minimum=0.1)
PAI_NODE_DOWN_AFTER_SECONDS = env_float("PAI_NODE_DOWN_AFTER_SECONDS", 30.0, minimum=0.0)
# How long a scheduler pass waits for one call to a node's engine (poll, stop, ping, network...).
# The call runs on the node's own worker thread; past this the pass goes on without the node, and
# the node gets no other call until that one returns (scheduling.executors).
PAI_NODE_CALL_DEADLINE_SECONDS = env_float("PAI_NODE_CALL_DEADLINE_SECONDS", 1.0, minimum=0.05)
# Slurm (VCs with a Slurm partition): the slurm.conf Slurm's commands read here (empty: Slurm's
# default, /etc/slurm/slurm.conf) and how often the partitions' nodes are read back (sinfo).
PAI_SLURM_CONF = env_str("PAI_SLURM_CONF", "")
PAI_SLURM_NODES_SECONDS = env_float("PAI_SLURM_NODES_SECONDS", 5.0, minimum=0.1)
# How often Slurm's queue is read (squeue: pending reasons, ended jobs); launches do not wait for it.
PAI_SLURM_QUEUE_SECONDS = env_float("PAI_SLURM_QUEUE_SECONDS", 1.0, minimum=0.0)
# The portal's Slurm jobs are named <prefix>-<job id>-<attempt>: unique per portal on a Slurm cluster.
PAI_SLURM_JOB_PREFIX = env_str("PAI_SLURM_JOB_PREFIX", "pai")
# Task resource samples (scheduling.sampler, `runsampler`: a process beside the scheduler's): how often,
# how long raw samples are kept before they are folded into one per minute, and how long those stay.
PAI_SAMPLE_SECONDS = env_float("PAI_SAMPLE_SECONDS", 10.0, minimum=0.5)
PAI_SAMPLE_RAW_HOURS = env_float("PAI_SAMPLE_RAW_HOURS", 24.0, minimum=0.0)
PAI_SAMPLE_KEEP_DAYS = env_float("PAI_SAMPLE_KEEP_DAYS", 30.0, minimum=0.0)
# Training metrics (PAI_METRIC lines, $PAI_METRICS_FILE; scheduling/training_metrics.py): the most
# points one job keeps (later ones are dropped and counted).
PAI_METRICS_MAX_POINTS = env_int("PAI_METRICS_MAX_POINTS", 100_000, minimum=0)

# /metrics (Prometheus): scrapers send `Authorization: Bearer <PAI_METRICS_TOKEN>`; without a
# token only signed-in admins may read it, unless PAI_METRICS_PUBLIC opens it to anyone.
PAI_METRICS_TOKEN = env_str("PAI_METRICS_TOKEN", "")
PAI_METRICS_PUBLIC = env_bool("PAI_METRICS_PUBLIC", False)

# The portal's emails (job changes, alerts): printed to the console unless an SMTP host is set.
# The outbox's sender (jobs/outbox.py, a thread of runsampler) sends them, each waiting at most
# PAI_EMAIL_TIMEOUT, never the scheduler; a user gets at most PAI_MAIL_DIGEST_AFTER of them in any
# PAI_MAIL_DIGEST_MINUTES, what comes beyond in one digest mail.
PAI_EMAIL_HOST = env_str("PAI_EMAIL_HOST", "")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if PAI_EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_HOST = PAI_EMAIL_HOST or "localhost"
EMAIL_PORT = env_int("PAI_EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("PAI_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = env_str("PAI_EMAIL_PASSWORD", "")
EMAIL_USE_TLS = env_bool("PAI_EMAIL_TLS", False)
EMAIL_TIMEOUT = env_float("PAI_EMAIL_TIMEOUT", 5.0, minimum=0.1)
DEFAULT_FROM_EMAIL = env_str("PAI_EMAIL_FROM", "pai-portal@localhost")
PAI_MAIL_DIGEST_AFTER = env_int("PAI_MAIL_DIGEST_AFTER", 5, minimum=1)
PAI_MAIL_DIGEST_MINUTES = env_int("PAI_MAIL_DIGEST_MINUTES", 10, minimum=0)
# A finished job's logs and work folders are removed this many days after it ended (0: kept).
PAI_RETENTION_DAYS = env_int("PAI_RETENTION_DAYS", 0, minimum=0)
# Webhooks (jobs/webhooks.py): targets on loopback, private, link-local or reserved addresses are
# refused unless their host (or host:port) is listed here; each POST waits this many seconds.
PAI_WEBHOOK_ALLOWED_HOSTS = env_list("PAI_WEBHOOK_ALLOWED_HOSTS", "")
PAI_WEBHOOK_TIMEOUT = env_float("PAI_WEBHOOK_TIMEOUT", 5.0, minimum=0.1)
# Interactive apps (Jupyter, TensorBoard, a job's `http` ports) are served by the portal's proxy
# at an origin of their own, `<app>.<PAI_APPS_DOMAIN>` (wildcard DNS to the portal; browsers
# resolve *.localhost themselves), on the port the portal is reached at unless PAI_APPS_PORT says.
PAI_APPS_DOMAIN = env_str("PAI_APPS_DOMAIN", "apps.localhost").strip(".").lower()
PAI_APPS_PORT = env_int("PAI_APPS_PORT", 0, minimum=0)
# A Jupyter app with no traffic and no busy kernel this long is stopped (0: never), unless its
# plugin says `idleMinutes`; others only when theirs says.
PAI_APP_IDLE_MINUTES = env_float("PAI_APP_IDLE_MINUTES", 120.0, minimum=0.0)

# Docker nodes: container/network name prefix (several portals or test runs may share an engine)
# and the pool per-job networks' /24 subnets are carved from.
PAI_DOCKER_NAMESPACE = env_str("PAI_DOCKER_NAMESPACE", "pai")
PAI_DOCKER_SUBNET_POOL = env_str("PAI_DOCKER_SUBNET_POOL", "10.213.0.0/16")
# Key for secrets and SSH private keys at rest; derived from SECRET_KEY when empty.
PAI_ENCRYPTION_KEY = env_str("PAI_ENCRYPTION_KEY", "")
# The web server (`manage.py serve`: granian): processes, request threads per process, and the
# seconds a client may take to send its request headers, each piece of its body, and to take each
# piece of the response (pai_portal/serving.py) before the connection is dropped.
PAI_BIND = env_str("PAI_BIND", "127.0.0.1")
PAI_PORT = env_int("PAI_PORT", 8000, minimum=1)
# The portal's address as users reach it (links in emails and webhooks, where an app's proxy sends a
# browser to sign in): by default where `manage.py serve` listens, PAI_BIND (this machine's loopback
# when it binds every address) and PAI_PORT.
_SERVED_HOST = "127.0.0.1" if PAI_BIND in {"0.0.0.0", "::", ""} else PAI_BIND
PAI_PUBLIC_URL = env_str(
    "PAI_PUBLIC_URL", f"http://{f'[{_SERVED_HOST}]' if ':' in _SERVED_HOST else _SERVED_HOST}:{PAI_PORT}"
)
PAI_WEB_WORKERS = env_int("PAI_WEB_WORKERS", 2, minimum=1)
PAI_HTTP_THREADS = env_int("PAI_HTTP_THREADS", 4, minimum=1)
PAI_HTTP_HEADER_TIMEOUT = env_float("PAI_HTTP_HEADER_TIMEOUT", 10, minimum=0.001)  # granian: at most 60
PAI_HTTP_READ_TIMEOUT = env_float("PAI_HTTP_READ_TIMEOUT", 30, minimum=0.001)
PAI_HTTP_WRITE_TIMEOUT = env_float("PAI_HTTP_WRITE_TIMEOUT", 30, minimum=0.001)
# A request body is read whole before a request thread is taken: within PAI_HTTP_BODY_TIMEOUT
# seconds in all (one more such period per PAI_MAX_BODY_BYTES of a big upload), and at most
# PAI_HTTP_BODIES_PER_CLIENT bodies still arriving from one client address per server process.
PAI_HTTP_BODY_TIMEOUT = env_float("PAI_HTTP_BODY_TIMEOUT", 30, minimum=0.001)
PAI_HTTP_BODIES_PER_CLIENT = env_int("PAI_HTTP_BODIES_PER_CLIENT", 8, minimum=1)

# Channels: in-memory by default, Redis when REDIS_URL is set.
REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The default cache holds what every web server process (PAI_WEB_WORKERS) must share: the
# sign-in throttles' counters, the app proxy's one-time tickets. Redis when REDIS_URL is set, else
# the database (table pai_cache, made by accounts' migration 0003 and `manage.py
# createcachetable`). Never files: a file cache unpickles whatever lies in its directory, and
# nothing the portal deserializes may live where a request could write.
# `throttles` holds the submit and list throttles' counters, asked on every API request: Redis
# too when set, else each server process's memory (the database cache wrote a row in a
# transaction of its own per request: six queries, and SQLite's one writer). Counted per process,
# a client gets the rate from each worker it reaches, at most PAI_WEB_WORKERS times it in all.
CACHES: dict[str, dict[str, Any]]
if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL},
        "throttles": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL},
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "pai_cache",
            # One row per client and scope; culling a third of them at 300 (Django's default)
            # would forget throttle counters under load.
            "OPTIONS": {"MAX_ENTRIES": 100_000},
        },
        "throttles": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "pai-throttles",
            "OPTIONS": {"MAX_ENTRIES": 100_000},
        },
    }

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Bearer first: its challenge makes a missing credential a 401, not a 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "web.api.auth.BearerTokenAuthentication",
        "web.api.auth.SessionWithCsrf",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["web.api.parsers.LimitedJSONParser", "web.api.parsers.LimitedFormParser"],
    "EXCEPTION_HANDLER": "web.api.errors.openpai_exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "submit": env_str("PAI_API_SUBMIT_RATE", "120/min"),
        "list": env_str("PAI_API_LIST_RATE", "600/min"),
        "login": env_str("PAI_API_LOGIN_RATE", "30/min"),
        "login_account": env_str("PAI_LOGIN_ACCOUNT_RATE", "10/min"),
    },
}
# API tokens (accounts.Token): lifetimes, the v2 job list's `limit` cap, the SSH key link's life.
PAI_API_LOGIN_TOKEN_SECONDS = env_int("PAI_API_LOGIN_TOKEN_SECONDS", 7 * 24 * 3600, minimum=60)
PAI_API_APP_TOKEN_SECONDS = env_int("PAI_API_APP_TOKEN_SECONDS", 365 * 24 * 3600, minimum=60)
PAI_API_MAX_LIST_LIMIT = env_int("PAI_API_MAX_LIST_LIMIT", 50000, minimum=1)
PAI_API_SSH_KEY_LINK_SECONDS = env_int("PAI_API_SSH_KEY_LINK_SECONDS", 300, minimum=1)
# The schema and API docs need a sign-in, as every page does, unless this says they are public.
PAI_API_DOCS_PUBLIC = env_bool("PAI_API_DOCS_PUBLIC")
SPECTACULAR_SETTINGS = {
    "TITLE": "PAI Portal API",
    "DESCRIPTION": "OpenPAI-compatible REST API for submitting and watching deep-learning jobs.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Every route is also served under /rest-server/api/ (OpenPAI's clients' base): one set of
    # entries, two servers, instead of every operation twice.
    "SERVERS": [
        {"url": "/", "description": "this portal"},
        {"url": "/rest-server", "description": "the same API where OpenPAI's clients look for it"},
    ],
    "PREPROCESSING_HOOKS": ["web.api.schema.without_alias_routes"],
}
# OpenPAI's REST server answers cross-origin clients (its web portal, the VS Code extension). The
# API authenticates with Bearer tokens, which a browser never adds by itself, and no credentials
# (cookies) are allowed cross-origin, so any origin may call it.
CORS_URLS_REGEX = r"^/(rest-server/)?api/.*$"
CORS_ALLOW_ALL_ORIGINS = True
CORS_ALLOW_CREDENTIALS = False

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the job pages' small scripts read it for POSTs
CSRF_FAILURE_VIEW = "web.error_pages.csrf_failure"  # the portal's 403 page, translated
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("PAI_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # `__Host-` cookies are the portal's host's alone: a page of an app (web/app_proxy, on a host
    # under a parent domain the portal may share) cannot plant one the portal would read.
    SESSION_COOKIE_NAME = "__Host-sessionid"
    CSRF_COOKIE_NAME = "__Host-csrftoken"
    SECURE_HSTS_SECONDS = env_int("PAI_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

PAI_LOG_LEVEL = env_str("PAI_LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": PAI_LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# --- Isolation: what a user's job may take and see (docs/admin/security.md) ------------------
# Everything the portal writes (database, logs, secret key, storage areas, work dirs) is its own:
# 0600 files and 0700 directories; files made before this rule lose their group/other bits here.
# var/ and the roots of the tasks' work dirs and the users' areas keep their x bits (0711, never
# listable): the process executor's sandbox, already running as the task's uid, passes through them
# to the one work dir and area it is given. The rest (secret key, database, logs) is 0700 / 0600.
os.umask(0o077)
_traversable_paths = [VAR_DIR, PAI_WORK_ROOT, PAI_FS_ROOT]
_private_paths = [VAR_DIR / "secret_key", PAI_LOG_DIR]
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    _database = Path(DATABASES["default"]["NAME"])
    _private_paths += [
        _database,
        _database.with_name(_database.name + "-wal"),
        _database.with_name(_database.name + "-shm"),
    ]
for _path, _keep in [*((p, 0o7711) for p in _traversable_paths), *((p, 0o7700) for p in _private_paths)]:
    if _path.exists() and _path.stat().st_uid == os.geteuid():
        _path.chmod(_path.stat().st_mode & _keep)
# A task's log keeps at most this many bytes: past it the oldest output goes (the page says so).
PAI_TASK_LOG_MAX_BYTES = env_int("PAI_TASK_LOG_MAX_BYTES", 64 * 1024 * 1024, minimum=1024)
# Processes (and threads) one task may have, on Docker and process nodes alike.
PAI_TASK_PIDS_LIMIT = env_int("PAI_TASK_PIDS_LIMIT", 4096, minimum=16)
# A portal running as root runs each user's process-node tasks as uid/gid PAI_SANDBOX_BASE_ID + user id.
PAI_SANDBOX_BASE_ID = env_int("PAI_SANDBOX_BASE_ID", 2_000_000, minimum=1000)
# The address `addnode --local` gives this machine's node: tasks' ports are opened there, never on
# the portal's own host name (cookies ignore ports), so it must not be one of PAI_ALLOWED_HOSTS.
PAI_LOCAL_NODE_ADDRESS = env_str("PAI_LOCAL_NODE_ADDRESS", "127.0.0.2")
