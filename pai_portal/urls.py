"""URL wiring only: the pages' routes are in web/urls.py (each area's table under its namespace), the
REST API's in web/api/urls.py, the profile's in accounts/urls.py."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.generic import RedirectView
from django.views.i18n import set_language

from accounts.oidc_views import PortalLogoutView, oidc_callback, oidc_login
from accounts.views import ThrottledLoginView

urlpatterns = [
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", PortalLogoutView.as_view(), name="logout"),
    # OpenID Connect (accounts/oidc.py): to the provider and back, both open before signing in.
    path("login/oidc/", oidc_login, name="oidc-login"),
    path("login/oidc/callback/", oidc_callback, name="oidc-callback"),
    # Open before signing in: the sign-in page's language switch posts here (LoginRequiredMiddleware
    # sent it to /login/?next=/i18n/setlang/, so the choice was lost and signing in landed there).
    path("i18n/setlang/", login_not_required(set_language), name="set_language"),
    # Where a browser looks for the icon of a page that names none (the Django admin), signed in or not.
    path("favicon.ico", login_not_required(RedirectView.as_view(url=f"{settings.STATIC_URL}portal/favicon.svg"))),
    path("admin/", admin.site.urls),
    path("api/", include("web.api.urls")),
    # OpenPAI's clients (SDK, webportal, VS Code extension) call <cluster>/rest-server/api/...
    path("rest-server/api/", include(("web.api.urls", "api"), namespace="rest-server")),
    path("profile/", include("accounts.urls")),
    path("", include("web.urls")),
]

# A request Django refuses before any route (a host not allowed...): `{code, message}` under /api/.
handler400 = "web.api.fallback.bad_request"
# A crash: the portal's page in its frame (403 and 404 are Django's handlers with our templates).
handler500 = "web.error_pages.server_error"
