from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from accounts.admin_labels import label
from accounts.models import Token


@admin.register(Token)
class TokenAdmin(admin.ModelAdmin):
    list_display = ("user", "kind", "name", "key_prefix", "created", "expires", "last_used")
    list_filter = ("kind",)
    search_fields = ("user__username", "name", "key_prefix")
    readonly_fields = ("key_hash", "key_prefix", "created", "last_used")


label(
    Token,
    _("token"),
    _("tokens"),
    {
        "user": _("User"),
        "key_hash": _("Key hash"),
        "key_prefix": _("Key prefix"),
        "name": _("Name"),
        "kind": _("Kind"),
        "created": _("Created"),
        "expires": _("Expires"),
        "last_used": _("Last used"),
    },
)
