"""The People pages (admins): users, batch register from CSV, groups and what they grant, the audit list."""

from django.urls import path

from web.people import views

app_name = "people"

urlpatterns = [
    path("people/", views.user_list, name="users"),
    path("people/users/<str:username>/", views.user_edit, name="user"),
    path("people/import/", views.user_import, name="import"),
    path("people/import/template.csv", views.csv_template, name="template"),
    path("people/groups/", views.group_list, name="groups"),
    path("people/groups/<str:groupname>/", views.group_edit, name="group"),
    path("people/groups/<str:groupname>/delete/", views.group_delete, name="group-delete"),
    path("people/audit/", views.audit_list, name="audit"),
]
