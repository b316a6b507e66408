"""The templates pages: browse and search, one template (start a job from it), save, edit (and share), delete."""

from django.urls import path

from web.job_templates import views

app_name = "templates"

urlpatterns = [
    path("templates/", views.template_list, name="list"),
    path("templates/new/", views.template_new, name="new"),
    path("templates/<int:template_id>/", views.template_detail, name="detail"),
    path("templates/<int:template_id>/edit/", views.template_edit, name="edit"),
    path("templates/<int:template_id>/delete/", views.template_delete, name="delete"),
]
