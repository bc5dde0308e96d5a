"""Salience settings. Every value comes from the environment with a safe development default.

`SALIENCE_ENV=production` switches to production rules: no debug, a real SECRET_KEY,
DATABASE_URL and MTURK_ENVIRONMENT must be given explicitly, and the local MTurk endpoint
is not mounted.
"""

from decimal import Decimal
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

# --- Mode -------------------------------------------------------------------------------
SALIENCE_ENV = env.str("SALIENCE_ENV", default="development")
if SALIENCE_ENV not in ("development", "production"):
    raise ImproperlyConfigured("SALIENCE_ENV must be 'development' or 'production'.")
PRODUCTION = SALIENCE_ENV == "production"
DEBUG = env.bool("DEBUG", default=not PRODUCTION)
if PRODUCTION and DEBUG:
    # Production serves strangers: Django's debug page would show them the settings, the URL
    # patterns and every traceback. `manage.py serve --host` beyond loopback turns it off too.
    raise ImproperlyConfigured(
        "DEBUG=true is refused with SALIENCE_ENV=production: the debug page would show participants the "
        "settings and URL patterns. Unset DEBUG (production runs without it)."
    )

_DEV_SECRET = "dev-only-insecure-secret-key-change-me"
SECRET_KEY = env.str("SECRET_KEY", default=_DEV_SECRET)
if PRODUCTION:
    missing = [name for name in ("SECRET_KEY", "DATABASE_URL", "MTURK_ENVIRONMENT") if name not in env]
    if missing:
        raise ImproperlyConfigured(f"Production needs these environment variables: {', '.join(missing)}.")
    if SECRET_KEY == _DEV_SECRET or len(SECRET_KEY) < 40:
        raise ImproperlyConfigured("Production needs a real SECRET_KEY (at least 40 random characters).")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[] if PRODUCTION else ["*"])
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000").rstrip("/")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# --- Applications -----------------------------------------------------------------------
INSTALLED_APPS = [
    "config.apps.AdminConfig",  # django.contrib.admin with its login throttled (config/admin_site.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "annotation",
    "crowd",
    "rehearsal.localturk",
    "rehearsal.localprolific",
    "ranking",
    "maps",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.security.SubmissionRateLimitMiddleware",
    # Django's sessions, auth and messages, skipped on the worker's HIT page, which uses none of them.
    "config.scoped_middleware.SessionsOffWorkerPages",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "config.scoped_middleware.AuthenticationOffWorkerPages",
    "config.scoped_middleware.MessagesOffWorkerPages",
    "config.security.ContentSecurityPolicyMiddleware",
    "config.reliability.DatabaseUnavailableMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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
            ],
        },
    },
]

# --- Database: SQLite file by default, PostgreSQL through DATABASE_URL -------------------
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'var' / 'salience.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside the writer; NORMAL syncs at checkpoints, not every commit;
    # IMMEDIATE takes the write lock up front instead of failing to upgrade a read lock.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=30,
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        transaction_mode="IMMEDIATE",
    )
    (BASE_DIR / "var").mkdir(exist_ok=True)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend with a health check that skips SELECT 1 on a quiet connection.
    DATABASES["default"]["ENGINE"] = "config.postgresql"
# Production keeps connections open: opening one costs several HIT pages
# (benchmarks/hit_page_bench.py). The development server starts a thread per request, which
# defeats them, and a test's live server would keep them past its test. The health check (a
# SELECT 1 before a request's first query) replaces a connection that died, say in a
# database restart, instead of failing the request that finds it.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60 if PRODUCTION else 0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("CONN_HEALTH_CHECKS", default=True)
# Behind a pooler in transaction mode (PgBouncer): no server-side cursors, no prepared statements.
if env.bool("DISABLE_SERVER_SIDE_CURSORS", default=False):
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Caches: page figures and HIT content, and rate-limit counters, in CACHE_URL -----------
# With Redis (docker-compose) every web worker and the Celery worker share one cache: a page
# one process computed is warm for the others and survives a restart of gunicorn (issue 26).
# Without CACHE_URL each process has its own memory. The two caches keep apart by prefix.
CACHES = {
    "default": {**env.cache_url("CACHE_URL", default="locmemcache://default"), "KEY_PREFIX": "cache"},
    "ratelimit": env.cache_url("CACHE_URL", default="locmemcache://ratelimit"),
}
# Submissions per minute (config/security.py); 0 turns a limit off.
SUBMIT_RATE_PER_WORKER = env.int("SUBMIT_RATE_PER_WORKER", default=30)
SUBMIT_RATE_PER_ADDRESS = env.int("SUBMIT_RATE_PER_ADDRESS", default=600)
# How many reverse proxies of ours stand in front of gunicorn, each appending to X-Forwarded-For;
# the client address is the entry the outermost one appended (config/client_address.py). 0: no
# proxy, the header is ignored. docker-compose.yml runs nginx in front and sets 1.
TRUSTED_PROXY_HOPS = env.int("TRUSTED_PROXY_HOPS", default=0)
if TRUSTED_PROXY_HOPS < 0:
    raise ImproperlyConfigured("TRUSTED_PROXY_HOPS must be 0 (no proxy) or the number of proxies in front.")
if "RATE_LIMIT_TRUST_FORWARDED_FOR" in env:
    # Refused rather than aliased: its default trusted a header every client can write.
    raise ImproperlyConfigured(
        "RATE_LIMIT_TRUST_FORWARDED_FOR is gone: set TRUSTED_PROXY_HOPS to the number of reverse "
        "proxies in front of gunicorn (1 for one proxy, what `true` meant; 0 or unset for none) "
        "and remove RATE_LIMIT_TRUST_FORWARDED_FOR."
    )
# Failed logins per window on the token endpoint and the dashboard login (config/login_throttle.py),
# per client address and per username from one address; 0 turns a limit off.
# Open participant links (issue 24, N3): live sessions a new one is refused beyond (429), per
# client address on a link and per link (0: no cap); a session whose page shows no activity for
# LINK_IDLE_RELEASE_SECONDS loses its task's place (the page keeps it while open). Shown on the
# Channel page.
LINK_SESSIONS_PER_ADDRESS = env.int("LINK_SESSIONS_PER_ADDRESS", default=3)
LINK_SESSIONS_PER_LINK = env.int("LINK_SESSIONS_PER_LINK", default=200)
LINK_IDLE_RELEASE_SECONDS = env.int("LINK_IDLE_RELEASE_SECONDS", default=600)
# Prolific arrivals (issue 24, N4): arrivals a minute per client address (429 beyond), calls
# a minute to Prolific that arrivals may make (503 with Retry-After beyond, so sync and
# publishing keep the rest of the workspace's rate budget), and how long Prolific's verdict on
# one (PID, SESSION_ID, study) is kept. 0 turns a limit off.
PROLIFIC_ARRIVALS_PER_ADDRESS = env.int("PROLIFIC_ARRIVALS_PER_ADDRESS", default=20)
PROLIFIC_ARRIVAL_CALLS_PER_MINUTE = env.int("PROLIFIC_ARRIVAL_CALLS_PER_MINUTE", default=60)
PROLIFIC_VERDICT_SECONDS = env.int("PROLIFIC_VERDICT_SECONDS", default=30)
LOGIN_FAILURES_PER_ADDRESS = env.int("LOGIN_FAILURES_PER_ADDRESS", default=50)
LOGIN_FAILURES_PER_USERNAME = env.int("LOGIN_FAILURES_PER_USERNAME", default=10)
LOGIN_FAILURE_WINDOW_SECONDS = env.int("LOGIN_FAILURE_WINDOW_SECONDS", default=900)

# --- Auth -------------------------------------------------------------------------------
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# --- Internationalisation and time ------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files (WhiteNoise) ----------------------------------------------------------
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Development serves static files from the source tree even with debug off (`serve --host`);
# production serves what collectstatic gathered.
WHITENOISE_USE_FINDERS = not PRODUCTION

# --- Celery: eager when no broker is configured, Redis otherwise ------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
if CELERY_TASK_ALWAYS_EAGER:
    # Nothing is sent: tasks run in the caller. Celery still makes a producer for an eager
    # task, and without a URL kombu warns that it falls back to localhost.
    CELERY_BROKER_URL = "memory://localhost/"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = "UTC"
SYNC_INTERVAL_SECONDS = env.int("SYNC_INTERVAL_SECONDS", default=60)
# Marketplace calls one process makes at once while it works a chunk of a publish or a sync
# (crowd.work.calls); each channel's own bound over every process caps them (MTURK_CONCURRENT_CALLS).
MARKETPLACE_CALLS_PER_PROCESS = env.int("MARKETPLACE_CALLS_PER_PROCESS", default=4)
if MARKETPLACE_CALLS_PER_PROCESS < 1:
    raise ImproperlyConfigured("MARKETPLACE_CALLS_PER_PROCESS must be at least 1.")
# Chunks a pass (a sync or a publish) aims to split its work into, so every process taking
# chunks gets some even when the pass is a few hundred HITs (crowd.work.chunks.chunks_split).
PASS_CHUNKS = env.int("PASS_CHUNKS", default=8)
if PASS_CHUNKS < 1:
    raise ImproperlyConfigured("PASS_CHUNKS must be at least 1.")
# The event path (ranking/workflow.py): a batch's last answer asks for its topic's step this
# many seconds later, so a burst of answers makes one request; beat above is the safety net.
STEP_EVENT_DEBOUNCE_SECONDS = env.float("STEP_EVENT_DEBOUNCE_SECONDS", default=1.0)
# The event path's task has a queue of its own, which every worker reads (no -Q needed): a
# worker that took a message from the default queue looks at the other one first next time
# (kombu rotates the queues it reads), so a step request never waits behind a pass's chunks.
CELERY_TASK_DEFAULT_QUEUE = "celery"
EVENTS_QUEUE = "events"
CELERY_TASK_QUEUES = (Queue(CELERY_TASK_DEFAULT_QUEUE), Queue(EVENTS_QUEUE))
CELERY_TASK_ROUTES = {"ranking.tasks.step_requested": {"queue": EVENTS_QUEUE}}
CELERY_BEAT_SCHEDULE = {
    # One pass of the campaign loop (ranking/workflow.py): sync, QC, advance, publish, finish.
    # A message older than one interval is dropped: the next one is on its way.
    "campaign-loop": {
        "task": "ranking.tasks.run_loop",
        "schedule": SYNC_INTERVAL_SECONDS,
        "options": {"expires": SYNC_INTERVAL_SECONDS},
    },
}

# --- MTurk ------------------------------------------------------------------------------
MTURK_ENVIRONMENT = env.str("MTURK_ENVIRONMENT", default="local" if not PRODUCTION else "sandbox")
if MTURK_ENVIRONMENT not in ("local", "sandbox", "production"):
    raise ImproperlyConfigured("MTURK_ENVIRONMENT must be local, sandbox or production.")
# Where the local endpoint answers; in development it is this very server.
MTURK_LOCAL_ENDPOINT_URL = env.str("MTURK_LOCAL_ENDPOINT_URL", default=f"{SITE_URL}/localturk/")
# Approve work this long before MTurk would auto-approve it, even if QC has not run yet.
MTURK_APPROVAL_MARGIN_SECONDS = env.int("MTURK_APPROVAL_MARGIN_SECONDS", default=6 * 3600)
# MTurk requests in flight at once over every process and machine (publishing, approvals;
# crowd.work.calls). MTurk publishes no rate limit; it answered ThrottlingException to bursts
# of 100+ sequential CreateHIT calls (reference §1.5), which botocore retries with back-off.
MTURK_CONCURRENT_CALLS = env.int("MTURK_CONCURRENT_CALLS", default=8)
if MTURK_CONCURRENT_CALLS < 1:
    raise ImproperlyConfigured("MTURK_CONCURRENT_CALLS must be at least 1.")
LOCALTURK_ENABLED = not PRODUCTION and env.bool("LOCALTURK_ENABLED", default=True)
# Who may frame HIT pages. Unset: 'self' and every channel's worker sites, as each channel's
# policy lists them (crowd.marketplaces; MTurk's worker.mturk.com and workersandbox.mturk.com).
HIT_FRAME_ANCESTORS = env.list("HIT_FRAME_ANCESTORS", default=[])

# --- Prolific: local (our Prolific-compatible endpoint) or production (real money) ------
PROLIFIC_ENVIRONMENT = env.str("PROLIFIC_ENVIRONMENT", default="production" if PRODUCTION else "local")
if PROLIFIC_ENVIRONMENT not in ("local", "production"):
    raise ImproperlyConfigured("PROLIFIC_ENVIRONMENT must be local or production.")
if (PROLIFIC_ENVIRONMENT == "production") != PRODUCTION:
    raise ImproperlyConfigured("PROLIFIC_ENVIRONMENT=production belongs to the production deployment, and only there.")
_PROLIFIC_LOCAL = PROLIFIC_ENVIRONMENT == "local"
PROLIFIC_API_URL = env.str(
    "PROLIFIC_API_URL",
    default=f"{SITE_URL}/localprolific/api/v1/" if _PROLIFIC_LOCAL else "https://api.prolific.com/api/v1/",
)
# The local endpoint accepts exactly this token; production needs the workspace's own.
PROLIFIC_API_TOKEN = env.str("PROLIFIC_API_TOKEN", default="salience-local-prolific-token" if _PROLIFIC_LOCAL else "")
# Prolific's platform fee on rewards and bonuses, VAT excluded: 42.8 % corporate, 33.3 %
# academic and non-profit (prolific.com/pricing). The default is the higher one.
PROLIFIC_SERVICE_FEE_RATE = Decimal(env.str("PROLIFIC_SERVICE_FEE_RATE", default="0.428"))
# The workspace's currency, GBP or USD, as Prolific set it when the workspace was created
# (api-reference/workspaces: currency_code): rewards, fees and the pay floor are in it.
PROLIFIC_CURRENCY = env.str("PROLIFIC_CURRENCY", default="USD")
if PROLIFIC_CURRENCY not in ("GBP", "USD"):
    raise ImproperlyConfigured("PROLIFIC_CURRENCY is the Prolific workspace's currency: GBP or USD.")
PROLIFIC_COMPLETION_URL = env.str(
    "PROLIFIC_COMPLETION_URL",
    default=f"{SITE_URL}/localprolific/submissions/complete?cc={{code}}"
    if _PROLIFIC_LOCAL
    else "https://app.prolific.com/submissions/complete?cc={code}",
)
LOCALPROLIFIC_ENABLED = not PRODUCTION and env.bool("LOCALPROLIFIC_ENABLED", default=LOCALTURK_ENABLED)

# --- Import limits ----------------------------------------------------------------------
IMPORT_MAX_BYTES = env.int("IMPORT_MAX_BYTES", default=200 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=5 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# --- REST API ---------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Every list in pages: ?page=, ?page_size= up to 500 (config/pagination.py).
    "DEFAULT_PAGINATION_CLASS": "config.pagination.Pages",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "config.errors.api_exception_handler",
}
# The schema (/api/schema/) and its docs page (/api/docs/) need a login unless this opens them.
API_DOCS_PUBLIC = env.bool("API_DOCS_PUBLIC", default=False)
SPECTACULAR_SETTINGS = {
    "TITLE": "Salience API",
    "DESCRIPTION": "Low-context importance annotation campaigns.",
    "VERSION": "0.1.0",
    # Several models have a `status`; give each choice set its own schema name.
    "ENUM_NAME_OVERRIDES": {
        "CampaignStatusEnum": "annotation.models.Campaign.Status",
        "BatchStatusEnum": "annotation.models.Batch.Status",
        "HITStatusEnum": "crowd.models.HIT.Status",
        "WorkerQualityStatusEnum": "crowd.models.WorkerQuality.Status",
        "MarketplaceEnvironmentEnum": "annotation.models.Campaign.Environment",
        "ParticipantLinkKindEnum": "crowd.models.ParticipantLink.Kind",
    },
    # The default enum hook first; then every operation's error responses (config/schema.py).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "config.schema.error_responses"],
}

# --- Security ---------------------------------------------------------------------------
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# --- Logging ----------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
