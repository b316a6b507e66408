"""Job pages. `<full_name>` is `<owner>~<name>`, the job's name everywhere, as in OpenPAI."""

from django.urls import path

from web import views

app_name = "jobs"

urlpatterns = [
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
]
