"""Profile pages, mounted at /profile/."""

from django.urls import path

from accounts import views

urlpatterns = [
    path("", views.profile, name="profile"),
    path("tokens/application", views.create_application_token, name="profile-create-token"),
    path("tokens/<int:token_id>/revoke", views.revoke, name="profile-revoke-token"),
    path("notifications", views.save_notifications, name="profile-notifications"),
    path("ssh-keys", views.add_ssh_key, name="profile-add-ssh-key"),
    path("ssh-keys/<int:key_id>/remove", views.remove_ssh_key, name="profile-remove-ssh-key"),
]
