from django.contrib import admin

from accounts.models import Token


@admin.register(Token)
class TokenAdmin(admin.ModelAdmin):
    list_display = ("user", "kind", "name", "key_prefix", "created", "expires", "last_used")
    list_filter = ("kind",)
    search_fields = ("user__username", "name", "key_prefix")
    readonly_fields = ("key_hash", "key_prefix", "created", "last_used")
