from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    """The scheduler loop and what it joins: jobs (what to run) and clusters (where)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "scheduling"
