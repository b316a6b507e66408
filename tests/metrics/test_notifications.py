"""One email to the owner when a job ends, if they asked (profile or the job's own extras)."""

import json

import pytest
from django.core import mail

from accounts.models import NotificationPreference
from jobs import outbox, webhooks
from jobs.actions import stop_job
from jobs.models import JobEvent, JobState
from tests.factories import password_for
from tests.metrics.test_webhooks import a_job_succeeds, deliver_everything
from tests.scheduler.conftest import role, v2_job

pytestmark = pytest.mark.django_db


PROD = "jobPriorityClass: prod\n"


def preemptible(name: str, extra: str = "", cpu: int = 6) -> str:
    """A job that ends at once on SIGTERM: preempted, it gives its room up without a wait."""
    return v2_job(name, role("worker", "trap 'exit 7' TERM; sleep 120 & wait", cpu=cpu), extra)


def ask(user, when: str, browser: bool = False) -> None:
    NotificationPreference.objects.create(user=user, email=when, browser=browser)


def test_it_mails_the_owner_once_when_a_job_ends(mailed_user, submit, run_until):
    ask(mailed_user, "ended")

    job = run_until(submit(v2_job("done", role("worker", "true"))), JobState.SUCCEEDED)
    assert mail.outbox == []  # the outbox's sender mails it, never the scheduler
    outbox.deliver_due()

    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["alice@example.org"]
    assert mail.outbox[0].subject == f"[PAI] Job {job.full_name} succeeded"


def test_it_mails_nobody_when_only_failures_were_asked_for(mailed_user):
    ask(mailed_user, "failed")

    a_job_succeeds(mailed_user)
    outbox.deliver_due()

    assert mail.outbox == []


def test_it_follows_the_jobs_own_notification_extras_over_the_profile(mailed_user, submit, run_until):
    ask(mailed_user, "never")
    extras = "extras:\n  jobStatusChangeNotification: {failed: true}\n"

    run_until(submit(v2_job("broken", role("worker", "exit 3"), extra=extras)), JobState.FAILED)
    outbox.deliver_due()

    assert [message.subject for message in mail.outbox] == ["[PAI] Job alice~broken failed"]


def test_it_lists_ended_jobs_for_the_browser_notifier(mailed_user, client):
    ask(mailed_user, "never", browser=True)
    client.login(username="alice", password=password_for("alice"))
    since = client.get("/notifications/ended.json").json()["now"] - 1

    a_job_succeeds(mailed_user)

    answer = client.get(f"/notifications/ended.json?since={since}").json()
    assert answer["jobs"] == [{"name": "alice~done", "state": "SUCCEEDED"}]


def test_it_saves_the_profiles_notification_settings(user, client):
    client.login(username="alice", password=password_for("alice"))

    client.post("/profile/notifications", {"email": "failed", "browser": "on"})

    assert NotificationPreference.objects.filter(user=user, email="failed", browser=True).exists()


def test_it_mails_when_the_job_runs_and_when_it_is_retried_if_the_config_asks(mailed_user, submit, run_until):
    extras = "jobRetryCount: 1\nextras:\n  jobStatusChangeNotification: {running: true, retried: true}\n"

    run_until(submit(v2_job("flaky", role("worker", "exit 3"), extra=extras)), JobState.FAILED)
    outbox.deliver_due()

    assert [message.subject for message in mail.outbox] == [
        "[PAI] Job alice~flaky is running",
        "[PAI] Job alice~flaky is being retried",
        "[PAI] Job alice~flaky is running",
    ]


def test_a_preempted_job_tells_its_owner_once_and_retried_to_clients_that_asked(
    mailed_user, default_vc, receiver, submit, run_until
):
    webhooks.create_hook(mailed_user, receiver.url, ["preempted"])
    webhooks.create_hook(mailed_user, receiver.url, ["retried"])  # an OpenPAI client: a preemption is a retry
    extras = "extras:\n  jobStatusChangeNotification: {preempted: true, retried: true}\n"
    victim = run_until(submit(preemptible("train", extras)), JobState.RUNNING)
    urgent = run_until(submit(preemptible("urgent", PROD, cpu=4)), JobState.RUNNING)
    victim = run_until(victim, JobState.WAITING)
    for _ in range(3):  # (more passes: nothing more)
        run_until(urgent, JobState.RUNNING)
    deliver_everything()

    assert victim.preemptions == 1
    assert [message.subject for message in mail.outbox] == [
        "[PAI] Job alice~train was preempted",
        "[PAI] Job alice~train is being retried",
    ]
    assert "preempted by job alice~urgent of VC default" in mail.outbox[0].body
    assert "preempted by job alice~urgent of VC default" in mail.outbox[1].body
    assert sorted(receiver.events()) == ["preempted", "retried"]
    assert JobEvent.objects.filter(job=victim, kind="preempted").count() == 1
    stop_job(urgent, urgent.owner)
    run_until(urgent, JobState.STOPPED)


def test_a_preemptions_notices_and_event_say_who_preempted_the_job_by_their_codes(
    user, default_vc, receiver, submit, run_until
):
    webhooks.create_hook(user, receiver.url, ["preempted", "retried"])
    victim = run_until(submit(preemptible("train")), JobState.RUNNING)
    urgent = run_until(submit(preemptible("urgent", PROD, cpu=4)), JobState.RUNNING)
    run_until(victim, JobState.WAITING)
    deliver_everything()

    payloads = [json.loads(post["body"]) for post in receiver.posts]
    details = {payload["event"]: payload["detailMessage"] for payload in payloads}
    assert details["preempted"]["code"] == "notice.preempted"
    by = {"code": "event.by_job", "params": {"job": "alice~urgent", "vc": "default"}}
    assert (details["retried"]["code"], details["retried"]["params"]["who"]) == ("notice.requeued", by)
    requeued = JobEvent.objects.get(job=victim, kind="requeued")
    assert requeued.params["params"]["who"]["code"] == "event.by_job"
    stop_job(urgent, urgent.owner)
    run_until(urgent, JobState.STOPPED)
