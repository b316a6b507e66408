"""/docs/: the documentation site `make docs` builds into site/ (mkdocs.yml), served as files.

Open before signing in, as the sign-in page's Help link needs it: the site holds the same text as
the repository's docs/. A directory is served by its index.html, as MkDocs' links expect; a site
not built yet answers a page saying to run `make docs`.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import SuspiciousFileOperation
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils._os import safe_join
from django.views.static import serve


@login_not_required
def docs_page(request: HttpRequest, path: str = "") -> HttpResponse | FileResponse:
    root = Path(settings.DOCS_SITE_DIR)
    if not (root / "index.html").is_file():
        return render(request, "help/not_built.html", status=404)
    try:
        target = Path(safe_join(root, path))
    except SuspiciousFileOperation:  # a path out of the site
        raise Http404(path) from None
    if target.is_dir():
        if path and not path.endswith("/"):
            return HttpResponseRedirect(request.path + "/")  # relative links are from the folder
        path = f"{path}index.html"
    return serve(request, path, document_root=str(root))
