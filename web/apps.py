from django.apps import AppConfig


class WebConfig(AppConfig):
    """No models: the pages, API and web terminal over the apps below."""

    name = "web"

    def ready(self) -> None:
        """The admin of jobs, and the VC form's rules, say their texts in the page's language, by the
        pages' translations."""
        from clusters import vc_rules
        from jobs.admin import SHOWN
        from web import reasons, texts
        from web.templatetags import portal

        SHOWN.update(
            event=portal.event_text,
            event_kind=portal.event_kind,
            diagnostics=lambda job: portal.diagnostics_text(job.exit_diagnostics_message, job.exit_diagnostics),
            pending_reason=reasons.job_reason,
        )
        vc_rules.SHOWN.update(message=texts.translated)  # (the VC form's refusals, on the pages and in the admin)
