"""One email to the owner when a job ends, if they asked (profile or the job's own extras)."""

import pytest
from django.core import mail

from accounts.models import NotificationPreference
from jobs.models import JobState
from tests.factories import password_for
from tests.scheduler.conftest import role, v2_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def mailed_user(user):
    user.email = "alice@example.org"
    user.save()
    return user


def ask(user, when: str, browser: bool = False) -> None:
    NotificationPreference.objects.create(user=user, email=when, browser=browser)


def test_it_mails_the_owner_once_when_a_job_ends(mailed_user, submit, run_until):
    ask(mailed_user, "ended")

    job = run_until(submit(v2_job("done", role("worker", "true"))), JobState.SUCCEEDED)

    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["alice@example.org"]
    assert mail.outbox[0].subject == f"[PAI] Job {job.full_name} succeeded"


def test_it_mails_nobody_when_only_failures_were_asked_for(mailed_user, submit, run_until):
    ask(mailed_user, "failed")

    run_until(submit(v2_job("done", role("worker", "true"))), JobState.SUCCEEDED)

    assert mail.outbox == []


def test_it_follows_the_jobs_own_notification_extras_over_the_profile(mailed_user, submit, run_until):
    ask(mailed_user, "never")
    extras = "extras:\n  jobStatusChangeNotification: {failed: true}\n"

    run_until(submit(v2_job("broken", role("worker", "exit 3"), extra=extras)), JobState.FAILED)

    assert [message.subject for message in mail.outbox] == ["[PAI] Job alice~broken failed"]


def test_it_lists_ended_jobs_for_the_browser_notifier(mailed_user, submit, run_until, client):
    ask(mailed_user, "never", browser=True)
    client.login(username="alice", password=password_for("alice"))
    since = client.get("/notifications/ended.json").json()["now"] - 1

    run_until(submit(v2_job("done", role("worker", "true"))), JobState.SUCCEEDED)

    answer = client.get(f"/notifications/ended.json?since={since}").json()
    assert answer["jobs"] == [{"name": "alice~done", "state": "SUCCEEDED"}]


def test_it_saves_the_profiles_notification_settings(user, client):
    client.login(username="alice", password=password_for("alice"))

    client.post("/profile/notifications", {"email": "failed", "browser": "on"})

    assert NotificationPreference.objects.filter(user=user, email="failed", browser=True).exists()


def test_it_mails_when_the_job_runs_and_when_it_is_retried_if_the_config_asks(mailed_user, submit, run_until):
    extras = "jobRetryCount: 1\nextras:\n  jobStatusChangeNotification: {running: true, retried: true}\n"

    run_until(submit(v2_job("flaky", role("worker", "exit 3"), extra=extras)), JobState.FAILED)

    assert [message.subject for message in mail.outbox] == [
        "[PAI] Job alice~flaky is running",
        "[PAI] Job alice~flaky is being retried",
        "[PAI] Job alice~flaky is running",
    ]
