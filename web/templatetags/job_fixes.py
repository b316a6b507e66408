"""`{% job_fix job as fix %}`: what to change after a failure (web.fixes), for the job page."""

from __future__ import annotations

from django import template

from jobs.models import Job
from web.fixes import Fix, fix_for

register = template.Library()


@register.simple_tag
def job_fix(job: Job) -> Fix | None:
    return fix_for(job)
