"""Profile pages, mounted at /profile/."""

from django.urls import path

from accounts import views

urlpatterns = [
    path("", views.profile, name="profile"),
    path("tokens/application", views.create_application_token, name="profile-create-token"),
    path("tokens/<int:token_id>/revoke", views.revoke, name="profile-revoke-token"),
    path("notifications", views.save_notifications, name="profile-notifications"),
]
