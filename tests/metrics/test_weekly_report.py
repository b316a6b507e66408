"""The weekly report: on Monday, last week's usage mailed once to each user who ran something
(and the cluster's to admins), never to who opted out."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from django.core import mail

from accounts.models import NotificationPreference
from jobs import outbox
from scheduling.models import UsageDay
from scheduling.weekly_report import send_weekly_reports
from tests.factories import create_job, create_user

pytestmark = pytest.mark.django_db

MONDAY = datetime(2026, 11, 23, 6, tzinfo=UTC)


@pytest.fixture
def last_week_ran(user, default_vc):
    user.email = "alice@example.org"
    user.save()
    job = create_job(user, "train", state="FAILED", completed_at=datetime(2026, 11, 18, tzinfo=UTC))
    UsageDay.objects.create(
        day=date(2026, 11, 17),
        job=job,
        job_name=job.full_name,
        user=user,
        vc_name="default",
        gpu_seconds=8 * 3600,
        gpu_used_seconds=2 * 3600,
        cpu_seconds=3600,
    )
    return job


def test_it_mails_last_weeks_usage_and_failed_jobs_on_monday(last_week_ran):
    assert send_weekly_reports(MONDAY) == 1
    assert mail.outbox == []  # written into the outbox, which sends it
    outbox.deliver_due()
    (message,) = mail.outbox
    assert message.to == ["alice@example.org"]
    assert message.subject == "[PAI] your usage, 2026-11-16 to 2026-11-22"
    assert "You held 8.0 GPU-hours" in message.body and "idle share 75 %" in message.body
    assert "alice~train: exit" in message.body


def test_it_mails_each_week_once(last_week_ran):
    send_weekly_reports(MONDAY)
    assert send_weekly_reports(MONDAY.replace(hour=7)) == 0
    outbox.deliver_due()
    assert len(mail.outbox) == 1


def test_it_mails_nothing_on_other_days_nor_to_who_opted_out(last_week_ran, user):
    assert send_weekly_reports(datetime(2026, 11, 24, 6, tzinfo=UTC)) == 0
    NotificationPreference.objects.create(user=user, weekly_report=False)
    assert send_weekly_reports(MONDAY) == 0
    outbox.deliver_due()
    assert mail.outbox == []


def test_an_admin_gets_the_clusters_report_with_its_top_users(last_week_ran):
    admin = create_user("root", admin=True)
    admin.email = "root@example.org"
    admin.save()
    send_weekly_reports(MONDAY)
    outbox.deliver_due()
    report = next(m for m in mail.outbox if m.to == ["root@example.org"])
    assert report.subject.startswith("[PAI] the cluster's usage") and "  alice: 8.0, 75 %" in report.body


def test_a_report_is_never_folded_into_a_digest(last_week_ran, user, settings):
    settings.PAI_MAIL_DIGEST_AFTER = 2
    for i in range(5):  # a burst of notices besides
        outbox.mail(user, f"[PAI] Notice {i}", "", event="succeeded")
    send_weekly_reports(MONDAY)
    outbox.deliver_due()
    assert sorted(message.subject for message in mail.outbox) == [
        "[PAI] 5 notices about your jobs",
        "[PAI] your usage, 2026-11-16 to 2026-11-22",
    ]
