"""Login is required everywhere except the login page, the API and /metrics (token auth answers
401 itself) and static files. The API's docs pages are pages: a browser is sent to sign in (unless
PAI_API_DOCS_PUBLIC)."""

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware

EXEMPT_PREFIXES = ("/api/", "/rest-server/api/", "/static/", "/metrics")
DOCS_PAGES = ("/api/docs/", "/api/redoc/", "/rest-server/api/docs/", "/rest-server/api/redoc/")


class PortalLoginRequiredMiddleware(LoginRequiredMiddleware):
    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path.startswith(DOCS_PAGES) and not settings.PAI_API_DOCS_PUBLIC:
            # DRF marks its views login_not_required (it answers 401 itself): a page must redirect.
            return None if request.user.is_authenticated else self.handle_no_permission(request, view_func)
        if request.path.startswith(EXEMPT_PREFIXES):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
