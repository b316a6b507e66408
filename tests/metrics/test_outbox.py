"""The outbox: what a change makes the portal send (mail, webhooks, alert notices) is written with
the change and sent by the sampler's process, never in a scheduler pass; a mail server that stalls
holds up nobody's jobs, nor anyone's webhooks; a burst of notices for one user goes as one digest."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.core import mail
from django.db import transaction
from django.utils import timezone

from jobs import lifecycle, outbox, webhooks
from jobs.models import FINISHED_JOB_STATES, Job, JobState, Notice
from scheduling.outbox import send_notices
from tests.factories import create_job, normalized_spec
from tests.scheduler.conftest import role, v2_job

MAILED = "extras:\n  jobStatusChangeNotification: {running: true, succeeded: true, failed: true}\n"


@pytest.fixture
def sender() -> Iterator[None]:
    """The outbox's sender, as runsampler runs it: a thread, handing out what is due every second."""
    stop = threading.Event()
    thread = threading.Thread(target=send_notices, args=(stop, lambda: True), daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(15)


def waiting_mails(user, count: int) -> None:
    for i in range(count):
        outbox.mail(user, f"[PAI] Notice {i}", f"Notice {i}.\n", event="succeeded")


@pytest.mark.slow  # (eight real jobs and a hung mail server: 4-14 s; the next test proves the rest with none)
@pytest.mark.django_db(transaction=True)
def test_a_mail_server_that_never_answers_holds_up_no_other_users_job(
    mailed_user, other_user, default_vc, mail_server, submit, scheduler, run_until, sender
):
    # Alice's earlier job, mailed while the server answered (and a worker's first task start, and
    # first notice, cost a second or two: not what is timed here).
    run_until(submit(v2_job("earlier", role("worker", "true"), extra=MAILED)), JobState.SUCCEEDED)
    mail_server.hang = True
    waiting_mails(mailed_user, 200)
    for i in range(6):  # each asks for a mail when it runs and when it ends
        submit(v2_job(f"mailed-{i}", role("worker", "true"), extra=MAILED))
    theirs = submit(v2_job("other", role("worker", "true")), owner=other_user)

    theirs = run_until(theirs, JobState.RUNNING, JobState.SUCCEEDED, timeout=60)

    assert theirs.launched_at is not None
    waited = (theirs.launched_at - theirs.created_at).total_seconds()  # submitted -> placed and RUNNING
    assert waited < 2.0, waited
    deadline = time.monotonic() + 10
    while mail_server.hung == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mail_server.hung == 1  # the sender tried the server once, then let it rest
    for job in Job.objects.all():  # (every task ended and seen: none left holding its ports)
        run_until(job, *FINISHED_JOB_STATES)


@pytest.mark.django_db
def test_a_hung_mail_server_rests_and_holds_up_no_webhook(mailed_user, other_user, mail_server, receiver, settings):
    settings.EMAIL_TIMEOUT = 60.0  # (the mail's connection is held until the test lets it go)
    mail_server.hang = True
    waiting_mails(mailed_user, 200)  # (a burst: one digest)
    other_user.email = "bob@example.org"
    other_user.save()
    waiting_mails(other_user, 2)
    webhooks.create_hook(other_user, receiver.url, ["succeeded"])
    webhooks.enqueue(create_job(other_user, state=JobState.SUCCEEDED), "succeeded")

    deadline = time.monotonic() + 10
    sender = outbox.Sender()
    try:
        sender.round()
        while not (receiver.posts and mail_server.hung) and time.monotonic() < deadline:
            time.sleep(0.01)
        # Posted while the mail server held the mail's connection unanswered (it holds it until let go).
        assert receiver.events() == ["succeeded"] and mail_server.hung == 1
        mail_server.let_go()  # (the connection closes unanswered: the mail fails now, not after its timeout)
        sender.collect(wait=True)
        assert sender.round() == 0  # the mail server rests: not tried again at once
    finally:
        sender.close()

    assert receiver.events() == ["succeeded"]
    assert mail_server.hung == 1
    waiting = Notice.objects.filter(channel=Notice.Channel.MAIL, next_attempt_at__isnull=False)
    assert sorted(waiting.values_list("event", "attempts")) == [("digest", 1), ("succeeded", 1), ("succeeded", 1)]
    retry = waiting.values_list("next_attempt_at", flat=True).distinct().get()
    assert retry is not None
    assert timedelta(seconds=25) < retry - timezone.now() <= timedelta(seconds=30)


@pytest.mark.django_db
def test_a_mail_server_that_never_answers_is_left_after_the_email_timeout(mailed_user, mail_server, settings):
    settings.EMAIL_TIMEOUT = 0.2
    mail_server.hang = True  # (it holds each connection for 600 s)
    waiting_mails(mailed_user, 1)

    began = time.monotonic()
    assert outbox.deliver_due() == 1
    waited = time.monotonic() - began

    assert 0.2 <= waited < 5, waited
    notice = Notice.objects.get()
    assert notice.attempts == 1 and notice.last_status.endswith("timed out"), notice.last_status
    assert notice.next_attempt_at is not None and notice.delivered_at is None


@pytest.mark.django_db
def test_a_notice_is_written_with_the_change_that_makes_it(mailed_user):
    spec = normalized_spec("done", {"worker": 1}, extras={"jobStatusChangeNotification": {"succeeded": True}})
    job = create_job(mailed_user, "done", spec=spec, state=JobState.RUNNING)
    with pytest.raises(RuntimeError), transaction.atomic():
        lifecycle.succeed(job, -220)
        raise RuntimeError("the change is rolled back")
    assert not Notice.objects.exists()

    lifecycle.succeed(job, -220)

    (notice,) = Notice.objects.all()
    assert (notice.channel, notice.event, notice.payload["to"]) == ("mail", "succeeded", ["alice@example.org"])
    assert mail.outbox == []
    assert outbox.deliver_due() == 1 and outbox.deliver_due() == 0  # sent once
    assert [message.subject for message in mail.outbox] == [f"[PAI] Job {job.full_name} succeeded"]


@pytest.mark.django_db
def test_a_burst_of_notices_for_one_user_goes_as_one_digest(mailed_user, other_user, settings):
    settings.PAI_MAIL_DIGEST_AFTER = 5
    other_user.email = "bob@example.org"
    other_user.save()
    waiting_mails(mailed_user, 40)
    waiting_mails(other_user, 2)

    outbox.deliver_due()

    to_alice = [message for message in mail.outbox if message.to == ["alice@example.org"]]
    (digest,) = to_alice
    assert digest.subject == "[PAI] 40 notices about your jobs"
    assert "Notice 0" in digest.body and "Notice 39" in digest.body
    assert [message.subject for message in mail.outbox if message.to == ["bob@example.org"]] == [
        "[PAI] Notice 0",
        "[PAI] Notice 1",
    ]
    assert not Notice.objects.filter(next_attempt_at__isnull=False).exists()


@pytest.mark.django_db
def test_a_user_gets_at_most_the_digest_rules_mails_in_its_window(mailed_user, settings):
    settings.PAI_MAIL_DIGEST_AFTER, settings.PAI_MAIL_DIGEST_MINUTES = 3, 10
    for i in range(8):  # one at a time: three go alone; the window is full, the others wait
        outbox.mail(mailed_user, f"[PAI] Notice {i}", "", event="succeeded")
        outbox.deliver_due()
    assert [message.subject for message in mail.outbox] == ["[PAI] Notice 0", "[PAI] Notice 1", "[PAI] Notice 2"]

    outbox.deliver_due(timezone.now() + timedelta(minutes=11))

    assert [message.subject for message in mail.outbox[3:]] == ["[PAI] 5 notices about your jobs"]
    assert all(f"Notice {i}" in mail.outbox[3].body for i in range(3, 8))


@pytest.mark.django_db
def test_it_forgets_notices_sent_or_given_up_a_month_ago(mailed_user):
    waiting_mails(mailed_user, 3)
    outbox.deliver_due()
    outbox.mail(mailed_user, "[PAI] Still waiting", "", event="failed")

    assert outbox.prune(timezone.now() + timedelta(days=outbox.KEEP_DAYS + 1)) == 3
    assert list(Notice.objects.values_list("payload__subject", flat=True)) == ["[PAI] Still waiting"]
