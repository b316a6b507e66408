from django.urls import path

from web.help.views import docs_page

app_name = "help"
urlpatterns = [
    path("docs/", docs_page, name="docs"),
    path("docs/<path:path>", docs_page, name="docs-page"),
]
