"""The pages' routes: each area's table under its namespace (`reverse("sweeps:detail", ...)`, as
when each area had a urls.py of its own), in the order they are matched. `<full_name>` is
`<owner>~<name>`, the job's name everywhere, as in OpenPAI. The REST API's are in web/api/urls.py."""

from django.urls import URLPattern, URLResolver, include, path

from web import views
from web.alerts import views as alerts
from web.app_proxy import views as app_proxy
from web.cluster import monitoring_views
from web.cluster import views as cluster
from web.experiments import views as experiments
from web.fixes import views as fixes
from web.help.views import docs_page
from web.job_templates import views as job_templates
from web.my_apps import views as my_apps
from web.notifications import views as notifications
from web.people import views as people
from web.ssh import views as ssh
from web.storage import views as storage
from web.sweeps import views as sweeps
from web.usage import views as usage
from web.vcs import views as vcs
from web.webhooks import views as webhooks


def area(namespace: str, *routes: URLPattern) -> URLResolver:
    """An area's routes under its namespace (Django's include of a (patterns, app_name) pair)."""
    return path("", include((list(routes), namespace)))


urlpatterns = [
    # Cluster pages.
    area(
        "scheduling",
        path("cluster/", cluster.cluster_overview, name="overview"),
        path("metrics", monitoring_views.metrics, name="metrics"),
        path("dashboard/", monitoring_views.dashboard, name="dashboard"),
        path("start/", monitoring_views.after_login, name="after-login"),
        path("dashboard/history.json", monitoring_views.dashboard_history, name="dashboard-history"),
    ),
    # Job pages.
    area(
        "jobs",
        path("", views.job_list, name="list"),
        path("submit/", views.submit, name="submit"),
        path("jobs/states.json", views.job_states, name="states"),
        path("jobs/jobs.csv", views.job_list_csv, name="list-csv"),
        path("jobs/stop-selected/", views.jobs_stop_selected, name="stop-selected"),
        path("jobs/<str:full_name>/", views.job_detail, name="detail"),
        path("jobs/<str:full_name>/status.json", views.job_status, name="status"),
        path("jobs/<str:full_name>/tasks.csv", views.job_tasks_csv, name="tasks-csv"),
        path("jobs/<str:full_name>/log", views.job_log, name="log"),
        path("jobs/<str:full_name>/log/download", views.job_log_download, name="log-download"),
        path("jobs/<str:full_name>/log/search", views.job_log_search, name="log-search"),
        path("jobs/<str:full_name>/log/lines", views.job_log_lines, name="log-lines"),
        path("jobs/<str:full_name>/stop/", views.job_stop, name="stop"),
        path("jobs/<str:full_name>/restart/", views.job_restart, name="restart"),
        path("jobs/<str:full_name>/priority/", views.job_priority, name="priority"),
        path("jobs/<str:full_name>/clone/", views.job_clone, name="clone"),
        path("jobs/<str:full_name>/export/", views.job_export, name="export"),
    ),
    # The storage page (the user's area of the default FS).
    area(
        "storage",
        path("storage/", storage.storage_page, name="browse"),
        path("storage/download", storage.storage_download, name="download"),
    ),
    # The sweeps pages: the list, one sweep with its runs, stop all, start the failed again.
    area(
        "sweeps",
        path("sweeps/", sweeps.sweep_list, name="list"),
        path("sweeps/<str:full_name>/", sweeps.sweep_detail, name="detail"),
        path("sweeps/<str:full_name>/curves.json", sweeps.sweep_curves, name="curves"),
        path("sweeps/<str:full_name>/points.json", sweeps.sweep_points, name="points"),
        path("sweeps/<str:full_name>/stop/", sweeps.sweep_stop, name="stop"),
        path("sweeps/<str:full_name>/resubmit/", sweeps.sweep_resubmit, name="resubmit"),
    ),
    # The templates pages: browse and search, one template (start a job from it), save, edit (and share), delete.
    area(
        "templates",
        path("templates/", job_templates.template_list, name="list"),
        path("templates/new/", job_templates.template_new, name="new"),
        path("templates/<int:template_id>/", job_templates.template_detail, name="detail"),
        path("templates/<int:template_id>/edit/", job_templates.template_edit, name="edit"),
        path("templates/<int:template_id>/delete/", job_templates.template_delete, name="delete"),
    ),
    # The People pages (admins): users, batch register from CSV, groups and what they grant, the audit list.
    area(
        "people",
        path("people/", people.user_list, name="users"),
        path("people/users/<str:username>/", people.user_edit, name="user"),
        path("people/import/", people.user_import, name="import"),
        path("people/import/template.csv", people.csv_template, name="template"),
        path("people/groups/", people.group_list, name="groups"),
        path("people/groups/<str:groupname>/", people.group_edit, name="group"),
        path("people/groups/<str:groupname>/delete/", people.group_delete, name="group-delete"),
        path("people/audit/", people.audit_list, name="audit"),
    ),
    # SSH routes: key download, SSH info, terminal page (the websocket is in web.routing).
    area(
        "jobs_ssh",
        path("jobs/<str:full_name>/ssh/key/", ssh.download_key, name="key"),
        path("jobs/<str:full_name>/ssh.json", ssh.ssh_info_json, name="info"),
        path("jobs/<str:full_name>/terminal/<str:role>/<int:index>/", ssh.terminal, name="terminal"),
    ),
    # Opening an interactive app (its pages are served by the proxy at the app's own host).
    area(
        "apps",
        path("apps/<str:slug>/open/", app_proxy.open_app, name="open"),
    ),
    # My apps: every live notebook, TensorBoard and app of the user's jobs (`apps:open` opens one), and its
    # owner's sharing of one with a group.
    area(
        "my_apps",
        path("apps/", my_apps.app_list, name="list"),
        path("apps/<str:slug>/share/", my_apps.app_share, name="share"),
    ),
    # The VC pages (admins): the VCs, one VC's jobs, usage and users, its form and its removal. A name is a
    # path (`createvc` and the form take any name, a slash too); edit and remove come first so that their
    # endings are not read as part of a name.
    area(
        "vcs",
        path("cluster/vcs/", vcs.vc_list, name="list"),
        path("cluster/new-vc/", vcs.vc_new, name="new"),
        path("cluster/vcs/<path:name>/edit/", vcs.vc_edit, name="edit"),
        path("cluster/vcs/<path:name>/remove/", vcs.vc_remove, name="remove"),
        path("cluster/vcs/<path:name>/", vcs.vc_detail, name="detail"),
    ),
    # Webhooks, under the profile.
    area(
        "webhooks",
        path("profile/webhooks/", webhooks.webhook_list, name="list"),
        path("profile/webhooks/<int:hook_id>/remove/", webhooks.webhook_remove, name="remove"),
    ),
    # Alerts and their rules.
    area(
        "alerts",
        path("alerts/", alerts.alert_list, name="list"),
        path("alerts/rules/<int:rule_id>/remove/", alerts.rule_remove, name="remove"),
    ),
    # Resource usage routes: a job's, and the Usage page's.
    area(
        "jobs_usage",
        path("jobs/<str:full_name>/usage.json", usage.usage_json, name="usage"),
        path("usage/", usage.usage_page, name="report"),
        path("usage/usage.csv", usage.usage_csv, name="report-csv"),
    ),
    # Training metrics routes: a job's (the job page's plot, the CSV).
    area(
        "experiments",
        path("jobs/<str:full_name>/metrics.json", experiments.metrics_json, name="metrics"),
        path("jobs/<str:full_name>/metrics.csv", experiments.metrics_csv, name="metrics-csv"),
    ),
    # Notification routes.
    area(
        "jobs_notifications",
        path("notifications/ended.json", notifications.ended_jobs, name="ended"),
    ),
    # Fix routes of a failed job.
    area(
        "jobs_fixes",
        path("jobs/<str:full_name>/resubmit-fix/", fixes.resubmit_with_fix, name="resubmit_fix"),
        # The OOM fix's first address (pages and scripts made before the other fixes).
        path("jobs/<str:full_name>/resubmit-memory/", fixes.resubmit_with_fix, name="resubmit_memory"),
    ),
    path("", include("web.legacy_links")),  # (OpenPAI webportal addresses, redirected)
    area(
        "help",
        path("docs/", docs_page, name="docs"),
        path("docs/<path:path>", docs_page, name="docs-page"),
    ),
]
