"""REST API routes (OpenPAI-compatible paths), mounted by pai_portal/urls.py at /api/ and again at
/rest-server/api/ (where OpenPAI's clients find the REST server behind OpenPAI's proxy)."""

from django.urls import path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularSwaggerView

from web.api.auth import DocsReader
from web.api.fallback import no_such_route
from web.api.schema import SchemaView
from web.api.views import (
    alerts,
    apps,
    attempts,
    auth,
    cluster,
    groups,
    job_templates,
    jobs_v1,
    jobs_v2,
    storages,
    sweeps,
    training_metrics,
    usage,
    users,
    vcs,
)

JOB = "v2/jobs/<str:full_name>"
V1_JOB = "v1/user/<str:username>/jobs/<str:job_name>"
# OpenPAI v1 also names a job `/api/v1/jobs/<user>~<job>`: the same views, the name split in two.
V1_FULL = r"^v1/jobs/(?P<username>[^/~]+)~(?P<job_name>[^/]+)"
DOCS = [DocsReader]

urlpatterns = [
    # Auth and tokens
    path("v2/authn/basic/login", auth.LoginView.as_view(), name="api-login"),
    path("v1/authn/basic/login", auth.LoginView.as_view(), name="api-v1-login"),
    path("v1/authn/basic/logout", auth.LogoutView.as_view(), name="api-v1-logout"),
    path("v1/authn/info", auth.AuthnInfoView.as_view(), name="api-v1-authn-info"),
    path("v2/authn/info", auth.AuthnInfoView.as_view(), name="api-authn-info"),
    path("v1/authn/oidc/login", auth.OidcLoginView.as_view(), name="api-v1-oidc-login"),
    path("v2/authn/oidc/login", auth.OidcLoginView.as_view(), name="api-oidc-login"),
    path("v1/authn/oidc/logout", auth.OidcLogoutView.as_view(), name="api-v1-oidc-logout"),
    path("v2/authn/oidc/logout", auth.OidcLogoutView.as_view(), name="api-oidc-logout"),
    path("v1/token", auth.LoginView.as_view(), name="api-v1-token"),
    path("v2/authn/basic/logout", auth.LogoutView.as_view(), name="api-logout"),
    path("v2/tokens", auth.TokenListView.as_view(), name="api-tokens"),
    path("v2/tokens/application", auth.ApplicationTokenView.as_view(), name="api-application-token"),
    path("v2/tokens/check", auth.TokenCheckView.as_view(), name="api-token-check"),
    path("v2/tokens/<str:token>", auth.TokenRevokeView.as_view(), name="api-token"),
    # v2 jobs
    path("v2/jobs", jobs_v2.JobsView.as_view(), name="api-jobs"),
    path("v2/sweeps", sweeps.SweepsView.as_view(), name="api-sweeps"),
    path("v2/usage", usage.UsageView.as_view(), name="api-usage"),
    path("v2/apps", apps.AppsView.as_view(), name="api-apps"),
    path("v2/apps/<str:slug>", apps.AppView.as_view(), name="api-app"),
    path("v2/alerts", alerts.AlertsView.as_view(), name="api-alerts"),
    path("v2/alert-rules", alerts.AlertRulesView.as_view(), name="api-alert-rules"),
    path("v2/alert-rules/<int:rule_id>", alerts.AlertRuleView.as_view(), name="api-alert-rule"),
    path("v2/templates", job_templates.TemplatesView.as_view(), name="api-templates"),
    path("v2/templates/<int:template_id>", job_templates.TemplateView.as_view(), name="api-template"),
    path("v2/sweeps/<str:full_name>", sweeps.SweepView.as_view(), name="api-sweep"),
    path("v2/sweeps/<str:full_name>/stop", sweeps.SweepStopView.as_view(), name="api-sweep-stop"),
    path("v2/sweeps/<str:full_name>/resubmit", sweeps.SweepResubmitView.as_view(), name="api-sweep-resubmit"),
    path(JOB, jobs_v2.JobDetailView.as_view(), name="api-job"),
    path(f"{JOB}/executionType", jobs_v2.ExecutionTypeView.as_view(), name="api-job-execution"),
    path(f"{JOB}/config", jobs_v2.JobConfigView.as_view(), name="api-job-config"),
    path(f"{JOB}/jobPriority", jobs_v2.JobPriorityView.as_view(), name="api-job-priority"),
    path(f"{JOB}/ssh", jobs_v2.JobSshView.as_view(), name="api-job-ssh"),
    path(f"{JOB}/events", jobs_v2.JobEventsView.as_view(), name="api-job-events"),
    path(f"{JOB}/metrics", training_metrics.JobMetricsView.as_view(), name="api-job-metrics"),
    path(f"{JOB}/tag", jobs_v2.JobTagView.as_view(), name="api-job-tag"),
    path(f"{JOB}/job-attempts", attempts.JobAttemptsView.as_view(), name="api-job-attempts"),
    path(f"{JOB}/job-attempts/<int:job_attempt>", attempts.JobAttemptView.as_view(), name="api-job-attempt"),
    path(f"{JOB}/attempts/<int:job_attempt>", attempts.JobAtAttemptView.as_view(), name="api-job-at-attempt"),
    path(
        f"{JOB}/attempts/<int:job_attempt>/taskRoles/<str:role>/taskIndex/<int:index>/attempts",
        attempts.TaskAttemptsView.as_view(),
        name="api-task-attempts",
    ),
    path(
        f"{JOB}/attempts/<int:job_attempt>/taskRoles/<str:role>/taskIndex/<int:index>/attempts/<int:task_attempt>/logs",
        jobs_v2.TaskLogsView.as_view(),
        name="api-task-logs",
    ),
    path("v2/task-logs/<str:token>", jobs_v2.TaskLogView.as_view(), name="api-task-log"),
    # v1 jobs
    path("v1/jobs", jobs_v1.V1JobsView.as_view(), name="api-v1-jobs"),
    re_path(f"{V1_FULL}$", jobs_v1.V1JobDetailView.as_view(), name="api-v1-job-by-full-name"),
    re_path(f"{V1_FULL}/executionType$", jobs_v1.V1ExecutionTypeView.as_view(), name="api-v1-full-execution"),
    re_path(f"{V1_FULL}/config$", jobs_v1.V1JobConfigView.as_view(), name="api-v1-full-config"),
    re_path(f"{V1_FULL}/ssh$", jobs_v1.V1JobSshView.as_view(), name="api-v1-full-ssh"),
    path("v1/user/<str:username>/jobs", jobs_v1.V1UserJobsView.as_view(), name="api-v1-user-jobs"),
    path(V1_JOB, jobs_v1.V1JobDetailView.as_view(), name="api-v1-user-job"),
    path(f"{V1_JOB}/executionType", jobs_v1.V1ExecutionTypeView.as_view(), name="api-v1-job-execution"),
    path(f"{V1_JOB}/config", jobs_v1.V1JobConfigView.as_view(), name="api-v1-job-config"),
    path(f"{V1_JOB}/ssh", jobs_v1.V1JobSshView.as_view(), name="api-v1-job-ssh"),
    re_path(r"^v1/jobs/(?P<job_name>[^/~]+)/ssh$", jobs_v1.V1OwnJobSshView.as_view(), name="api-v1-own-job-ssh"),
    # OpenPAI 0.x's v2 spelling of the per-user job routes.
    path("v2/user/<str:username>/jobs/<str:job_name>", jobs_v1.V1JobDetailView.as_view(), name="api-v2-user-job"),
    path(
        "v2/user/<str:username>/jobs/<str:job_name>/executionType",
        jobs_v1.V1ExecutionTypeView.as_view(),
        name="api-v2-user-job-execution",
    ),
    path("v1/ssh-keys/<str:token>", jobs_v1.SshKeyDownloadView.as_view(), name="api-v1-ssh-key"),
    # Cluster, users, info. OpenPAI answers `GET /api/v1` with its name and version (clients probe it).
    path("v1", cluster.InfoView.as_view(), name="api-v1-root"),
    path("v2/info", cluster.InfoView.as_view(), name="api-info"),
    path("v1/virtual-clusters", cluster.V1VirtualClustersView.as_view(), name="api-v1-vcs"),
    path("v1/virtual-clusters/<str:vc_name>", cluster.VirtualClusterView.as_view(), name="api-v1-vc"),
    # v2's VC routes also make, change and remove VCs (admins): web/api/views/vcs.py.
    path("v2/virtual-clusters", vcs.VirtualClustersView.as_view(), name="api-vcs"),
    path("v2/virtual-clusters/<str:vc_name>", vcs.VirtualClusterView.as_view(), name="api-vc"),
    path("v2/nodes", cluster.NodesView.as_view(), name="api-nodes"),
    path("v2/nodes/<str:node_name>", cluster.NodeView.as_view(), name="api-node"),
    path("v2/storages", storages.StoragesView.as_view(), name="api-storages"),
    path("v2/storages/<str:storage_name>", storages.StorageView.as_view(), name="api-storage"),
    path("v2/users", users.UsersView.as_view(), name="api-users"),
    path("v2/users/<str:username>/group", groups.UserGroupView.as_view(), name="api-user-group"),
    path("v2/users/<str:username>/grouplist", groups.UserGroupListView.as_view(), name="api-user-grouplist"),
    # Groups (OpenPAI mounts them at /group and /groups alike: the singular ones are named *-singular).
    *(
        route
        for mount, suffix in (("groups", ""), ("group", "-singular"))
        for route in (
            path(f"v2/{mount}", groups.GroupsView.as_view(), name=f"api-groups{suffix}"),
            path(f"v2/{mount}/<str:groupname>", groups.GroupView.as_view(), name=f"api-group{suffix}"),
            *(
                path(f"v2/{mount}/<str:groupname>/{tail}", view.as_view(), name=f"api-group-{name}{suffix}")
                for tail, view, name in (
                    ("userlist", groups.GroupUserListView, "users"),
                    ("extension", groups.GroupExtensionView, "extension"),
                    ("description", groups.GroupDescriptionView, "description"),
                    ("externalname", groups.GroupExternalNameView, "externalname"),
                )
            ),
        )
    ),
    path("v2/users/me", users.MeView.as_view(), name="api-user-me"),
    path("v2/users/<str:username>", users.UserView.as_view(), name="api-user"),
    path("v2/users/<str:username>/password", users.UserPasswordView.as_view(), name="api-user-password"),
    path("v2/users/<str:username>/email", users.UserEmailView.as_view(), name="api-user-email"),
    path("v2/users/<str:username>/admin", users.UserAdminFlagView.as_view(), name="api-user-admin"),
    path("v2/users/<str:username>/virtualcluster", users.UserVirtualClustersView.as_view(), name="api-user-vcs"),
    path("v2/user/<str:username>", users.UserView.as_view(), name="api-v2-user"),
    path("v1/user/<str:username>", users.UserView.as_view(), name="api-v1-user"),
    # OpenAPI schema and docs (assets from drf-spectacular-sidecar, no CDN)
    path("schema/", SchemaView.as_view(permission_classes=DOCS), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema", permission_classes=DOCS), name="api-docs"),
    # Redoc loaded Google Fonts and its logo from off the portal: its address now opens Swagger UI.
    path("redoc/", RedirectView.as_view(pattern_name="api-docs"), name="api-redoc"),
    # A trailing slash is served as without it (as OpenPAI's Express does); anything else, line
    # breaks included (`.` takes none), is a 404 NoApiError.
    re_path(r"^[\s\S]*$", no_such_route, name="api-none"),
]
