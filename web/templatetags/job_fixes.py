"""`{% job_fix job as fix %}`: what to change after a failure (web.fixes), for the job page;
`{% fix_label fix %}`: its one-click resubmit's words."""

from __future__ import annotations

from django import template

from jobs.models import Job
from web.fixes import Fix, fix_for, resubmit_label

register = template.Library()


@register.simple_tag
def job_fix(job: Job) -> Fix | None:
    return fix_for(job)


@register.simple_tag
def fix_label(fix: Fix) -> str:
    return resubmit_label(fix)
