"""REST API routes (OpenPAI-compatible paths), mounted at /api/ by pai_portal/urls.py."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from jobs.api.auth import DocsReader
from jobs.api.views import auth, cluster, jobs_v1, jobs_v2

JOB = "v2/jobs/<str:full_name>"
V1_JOB = "v1/user/<str:username>/jobs/<str:job_name>"
# OpenPAI v1 also names a job `/api/v1/jobs/<user>~<job>`: the same views, the name split in two.
V1_FULL = r"^v1/jobs/(?P<username>[^/~]+)~(?P<job_name>[^/]+)"
DOCS = [DocsReader]

urlpatterns = [
    # Auth and tokens
    path("v2/authn/basic/login", auth.LoginView.as_view(), name="api-login"),
    path("v1/token", auth.LoginView.as_view(), name="api-v1-token"),
    path("v2/authn/basic/logout", auth.LogoutView.as_view(), name="api-logout"),
    path("v2/tokens", auth.TokenListView.as_view(), name="api-tokens"),
    path("v2/tokens/application", auth.ApplicationTokenView.as_view(), name="api-application-token"),
    path("v2/tokens/<str:token>", auth.TokenRevokeView.as_view(), name="api-token"),
    # v2 jobs
    path("v2/jobs", jobs_v2.JobsView.as_view(), name="api-jobs"),
    path(JOB, jobs_v2.JobDetailView.as_view(), name="api-job"),
    path(f"{JOB}/executionType", jobs_v2.ExecutionTypeView.as_view(), name="api-job-execution"),
    path(f"{JOB}/config", jobs_v2.JobConfigView.as_view(), name="api-job-config"),
    path(f"{JOB}/ssh", jobs_v2.JobSshView.as_view(), name="api-job-ssh"),
    path(f"{JOB}/events", jobs_v2.JobEventsView.as_view(), name="api-job-events"),
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
    path("v1/ssh-keys/<str:token>", jobs_v1.SshKeyDownloadView.as_view(), name="api-v1-ssh-key"),
    # Cluster, users, info
    path("v2/virtual-clusters", cluster.VirtualClustersView.as_view(), name="api-vcs"),
    path("v2/virtual-clusters/<str:vc_name>", cluster.VirtualClusterView.as_view(), name="api-vc"),
    path("v2/users", cluster.UsersView.as_view(), name="api-users"),
    path("v2/users/<str:username>", cluster.UserView.as_view(), name="api-user"),
    path("v2/info", cluster.InfoView.as_view(), name="api-info"),
    # OpenAPI schema and docs (assets from drf-spectacular-sidecar, no CDN)
    path("schema/", SpectacularAPIView.as_view(permission_classes=DOCS), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema", permission_classes=DOCS), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema", permission_classes=DOCS), name="api-redoc"),
    # Anything else under /api/ is OpenPAI's 404 NoApiError, never an HTML page.
    re_path(r"^.*$", cluster.NoApiView.as_view(), name="api-none"),
]
