"""Login is required everywhere except the login page, the API and /metrics (token auth answers
401 itself) and static files."""

from django.contrib.auth.middleware import LoginRequiredMiddleware

EXEMPT_PREFIXES = ("/api/", "/rest-server/api/", "/static/", "/metrics")


class PortalLoginRequiredMiddleware(LoginRequiredMiddleware):
    def process_view(self, request, view_func, view_args, view_kwargs):  # type: ignore[no-untyped-def]
        if request.path.startswith(EXEMPT_PREFIXES):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
