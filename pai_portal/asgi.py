"""ASGI entry point: HTTP through Django's WSGI handler on a thread pool, websockets (web SSH)
through Channels, and the interactive apps' hosts through their proxy (web/app_proxy).

Every view is synchronous. Under Django's ASGI handler each request hops between the event loop
and threads for every middleware (about 3x the latency of the WSGI handler on this project's
machines, see bench/api.py); a2wsgi runs the whole request on one pool thread instead.
"""

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
# Django must be set up (this does it) before the consumers and the models they import are loaded.
django_http_app = get_wsgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import get_resolver  # noqa: E402

from pai_portal.body_limits import body_limit  # noqa: E402
from pai_portal.origin import SameOriginValidator  # noqa: E402
from pai_portal.serving import (  # noqa: E402
    BodyPolicy,
    OneHopWSGIMiddleware,
    TimeoutsAndFileStreaming,
    exit_with_master,
    hand_off_files,
)
from web.app_proxy.proxy import AppProxy, route_by_host  # noqa: E402
from web.routing import websocket_urlpatterns  # noqa: E402

# Request threads per server process (PAI_HTTP_THREADS). With SQLite few beat many (threads of one
# process wait on each other's write lock: 8 threads gave 35 % fewer submits/s than 2 in
# bench/api.py). Files (logs, static) are streamed on the event loop and other streamed answers
# made piece by piece as the client takes them (pai_portal/serving.py), so a slow client
# downloading a big log holds no thread.

portal_application = ProtocolTypeRouter(
    {
        # django-stubs types WSGIHandler.__call__ as returning HttpResponse, which is iterable bytes.
        "http": TimeoutsAndFileStreaming(
            OneHopWSGIMiddleware(
                hand_off_files(django_http_app),
                workers=settings.PAI_HTTP_THREADS,
                body=BodyPolicy(
                    limit=body_limit,
                    total_timeout=settings.PAI_HTTP_BODY_TIMEOUT,
                    limit_unit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
                    per_client=settings.PAI_HTTP_BODIES_PER_CLIENT,
                ),
            ),
            read_timeout=settings.PAI_HTTP_READ_TIMEOUT,
            write_timeout=settings.PAI_HTTP_WRITE_TIMEOUT,
        ),
        # The Origin's host must be allowed and its scheme, host and port the portal's own.
        "websocket": SameOriginValidator(
            AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
        ),
    }
)

# Apps (Jupyter, TensorBoard...) at their own hosts, `<app>.<PAI_APPS_DOMAIN>`: web/app_proxy.
app_proxy = AppProxy()
application = route_by_host(portal_application, app_proxy)

# What is loaded by now (Django, the apps, the URLconf) lives as long as the process: out of the
# garbage collector's sight, so its collections stop walking it over and over. A 1000-row job list
# spent three quarters of its serialising in those walks (bench/api.py). The URLconf's views load
# on the first request otherwise, after the freeze: 46,000 objects each full collection walked.
get_resolver().url_patterns  # noqa: B018  (imports every view module now)
gc.freeze()
exit_with_master()
