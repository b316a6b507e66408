"""The outbox: everything the portal sends because something changed (a job's mail to its owner,
its webhooks' POSTs, an alert's notices) is a `Notice` row written in the transaction of that
change, so a crash loses none and a change rolled back sends none. One sender sends them: the
`outbox` thread of `runsampler` (scheduling/outbox.py, under the sampler's lease), never a
scheduler pass.

Sending. Each destination (the mail server; each webhook) is served on a pool thread of its own,
its notices in the order they were written, each waiting at most its timeout (PAI_EMAIL_TIMEOUT,
PAI_WEBHOOK_TIMEOUT) and a batch at most BATCH_S; the round that hands the work out never waits
for a send, so a destination that stalls holds up no other. A destination that fails (no answer,
a refused connection, a non-2xx answer) rests with everything it has waiting: tried again after
30 s, 2 min, 8 min, 32 min and 2 h, and what waited through all six failures is given up. A mail
the server refuses for its own recipients (or its content) alone backs off by itself; the other
mails go on.

Digests. A user gets at most PAI_MAIL_DIGEST_AFTER mails in any PAI_MAIL_DIGEST_MINUTES; the mails
beyond wait, and go out together as one digest naming each as soon as the window has room again
(a sweep of 1,000 runs makes a handful of mails, not 1,000). Webhooks are never folded: a
receiver gets every change, at least once (`X-PAI-Delivery` is the notice's id).
"""

from __future__ import annotations

import contextlib
import logging
import smtplib
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.db.models import Count, F, Min, QuerySet
from django.utils import timezone

from jobs import webhooks
from jobs.models import Job, Notice

log = logging.getLogger("pai.outbox")

BACKOFF_S = (30, 120, 480, 1920, 7200)  # after a destination's failures 1..5; the 6th gives up
CLAIM_S = 120  # a notice being sent is not picked again before this (a sender that died mid-send)
BATCH = 50  # notices a destination is handed at once
BATCH_S = 10.0  # a batch takes no new notice after this long (a slow server): the rest, next round
SENDERS = 8  # destinations served side by side
DIGEST_LINES = 500  # a digest names this many notices, then counts the rest
KEEP_DAYS = 30  # sent and given-up notices are kept this long (the webhooks page lists the latest)

DIGEST, WEEKLY = "digest", "weekly"  # mails sent as they are, never folded (the weekly report is long)
MAIL = Notice.Channel.MAIL
WEBHOOK = Notice.Channel.WEBHOOK
Destination = tuple[str, int]  # (channel, webhook id; 0 for the mail server)
MAIL_SERVER: Destination = (MAIL, 0)


# ---- writing -------------------------------------------------------------------------------------
def mail(user: Any, subject: str, body: str, *, event: str, job: Job | None = None, line: str = "") -> bool:
    """A mail to `user` (none when they have no address), for the transaction of the change that
    makes it. `line`: how a digest names it (the subject without "[PAI] " by default)."""
    if not user.email:
        return False
    Notice.objects.create(
        channel=MAIL,
        recipient=user,
        job=job,
        event=event,
        payload={"to": [user.email], "subject": subject, "body": body, "line": line or subject.removeprefix("[PAI] ")},
        next_attempt_at=timezone.now(),
    )
    return True


def prune(now: datetime | None = None) -> int:
    """Sent and given-up notices older than KEEP_DAYS go (the sampler's hourly round)."""
    cutoff = (now or timezone.now()) - timedelta(days=KEEP_DAYS)
    deleted, _ = Notice.objects.filter(next_attempt_at__isnull=True, created_at__lt=cutoff).delete()
    return deleted


# ---- sending -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    ok: bool
    status: str  # "sent", "200", "no answer: ...": kept as the notice's last_status
    whole: bool = True  # a failure of the destination (everything it has waiting rests), not of this notice


def deliver_due(now: datetime | None = None) -> int:
    """One round that waits for its sends (tests, commands): how many notices were tried."""
    sender = Sender()
    try:
        return sender.round(now, wait=True)
    finally:
        sender.close()


class Sender:
    """Hands each destination with notices due its batch, on a pool thread; writes down what came
    of the batches that finished (the database is written on the calling thread only)."""

    def __init__(self, threads: int = SENDERS) -> None:
        self._threads = threads
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="outbox")
        self._busy: dict[Destination, tuple[list[Notice], Future[list[Outcome | None]]]] = {}
        self._resting: dict[Destination, datetime] = {}  # failed destinations: not before then

    def round(self, now: datetime | None = None, *, wait: bool = False) -> int:
        """Record what finished, hand out what is due; how many notices were handed out."""
        now = now or timezone.now()
        self.collect()
        handed = 0
        for destination, notices in self._due(now).items():
            claimed = _claim(notices, now)
            if claimed:
                send = _send_mails if destination == MAIL_SERVER else _post_webhooks
                self._busy[destination] = (claimed, self._pool.submit(send, claimed))
                handed += len(claimed)
        if wait:
            self.collect(wait=True)
        return handed

    def collect(self, wait: bool = False) -> None:
        for destination, (notices, future) in list(self._busy.items()):
            if not (wait or future.done()):
                continue
            del self._busy[destination]
            try:
                outcomes = future.result()
            except Exception as exc:  # (the senders catch their own: a bug's last resort)
                outcomes = [Outcome(False, f"{exc.__class__.__name__}: {exc}")] + [None] * (len(notices) - 1)
            self._record(destination, notices, outcomes)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _free(self, destination: Destination, now: datetime) -> bool:
        return destination not in self._busy and self._resting.get(destination, now) <= now

    def _due(self, now: datetime) -> dict[Destination, list[Notice]]:
        room = self._threads - len(self._busy)
        work: dict[Destination, list[Notice]] = {}
        if room and self._free(MAIL_SERVER, now):
            mails = _mails_due(now)
            if mails:
                work[MAIL_SERVER] = mails
                room -= 1
        if room <= 0:
            return work
        due = Notice.objects.filter(channel=WEBHOOK, next_attempt_at__lte=now)
        hooks = due.order_by().values_list("webhook_id").annotate(first=Min("id")).order_by("first")
        for hook_id, _ in hooks[: room + len(self._busy) + len(self._resting)]:
            destination = (WEBHOOK, hook_id)
            if self._free(destination, now):
                work[destination] = list(
                    due.filter(webhook_id=hook_id).select_related("webhook").order_by("id")[:BATCH]
                )
                room -= 1
                if not room:
                    break
        return work

    def _record(self, destination: Destination, notices: list[Notice], outcomes: list[Outcome | None]) -> None:
        now = timezone.now()
        for notice, outcome in zip(notices, outcomes, strict=True):
            one = Notice.objects.filter(pk=notice.pk)
            if outcome is None:  # not tried (a batch cut short): due again
                one.filter(next_attempt_at__isnull=False).update(next_attempt_at=now)
            elif outcome.ok:
                one.update(
                    attempts=F("attempts") + 1, delivered_at=now, next_attempt_at=None, last_status=outcome.status
                )
            elif not outcome.whole:
                _back_off(one, notice.attempts + 1, outcome.status, now)
            else:  # the destination failed: all it has waiting rests (the rest of this batch included)
                self._resting[destination] = _back_off(_waiting(destination), notice.attempts + 1, outcome.status, now)
                return
        self._resting.pop(destination, None)


def _claim(notices: list[Notice], now: datetime) -> list[Notice]:
    """Held for CLAIM_S: another sender (or this one after a crash) takes them only after that."""
    until = now + timedelta(seconds=CLAIM_S)
    ids = [notice.pk for notice in notices]
    Notice.objects.filter(pk__in=ids, next_attempt_at__lte=now).update(next_attempt_at=until)
    mine = set(Notice.objects.filter(pk__in=ids, next_attempt_at=until).values_list("pk", flat=True))
    return [notice for notice in notices if notice.pk in mine]


def _waiting(destination: Destination) -> QuerySet[Notice]:
    rows = Notice.objects.filter(channel=destination[0], next_attempt_at__isnull=False)
    return rows if destination == MAIL_SERVER else rows.filter(webhook_id=destination[1])


def _back_off(rows: QuerySet[Notice], attempts: int, status: str, now: datetime) -> datetime:
    """Each of `rows` one more failed try: again after the backoff of `attempts` (the first failed
    notice's), given up after the last. Returns when they are tried again."""
    status = status[:200]
    given_up = rows.filter(attempts__gte=len(BACKOFF_S)).update(
        attempts=F("attempts") + 1, next_attempt_at=None, last_status=status
    )
    if given_up:
        log.warning("gave up %s notice(s) after %s tries: %s", given_up, len(BACKOFF_S) + 1, status)
    retry = now + timedelta(seconds=BACKOFF_S[min(attempts, len(BACKOFF_S)) - 1])
    rows.filter(next_attempt_at__isnull=False).update(
        attempts=F("attempts") + 1, next_attempt_at=retry, last_status=status
    )
    return retry


def _said(exc: BaseException) -> str:
    return f"{exc.__class__.__name__}: {exc}"[:200]


def _send_mails(notices: list[Notice]) -> list[Outcome | None]:
    """One connection to the mail server for the batch, the mails in order (a pool thread: no
    database). A mail refused for its recipients or content fails alone; any other trouble is the
    server's, and ends the batch."""
    outcomes: list[Outcome | None] = []
    began = time.monotonic()
    connection = get_connection(fail_silently=False)
    try:
        connection.open()
        for notice in notices:
            if time.monotonic() - began > BATCH_S:
                break
            payload = notice.payload
            message = EmailMessage(payload["subject"], payload["body"], None, payload["to"], connection=connection)
            try:
                message.send()
            except (smtplib.SMTPRecipientsRefused, smtplib.SMTPDataError) as exc:
                outcomes.append(Outcome(False, _said(exc), whole=False))
            else:
                outcomes.append(Outcome(True, "sent"))
    except Exception as exc:  # no connection, no answer in time, the sender refused...
        outcomes.append(Outcome(False, _said(exc)))
    finally:
        with contextlib.suppress(Exception):
            connection.close()
    return outcomes + [None] * (len(notices) - len(outcomes))


def _post_webhooks(notices: list[Notice]) -> list[Outcome | None]:
    """One hook's POSTs in order, until one fails (a pool thread: no database)."""
    outcomes: list[Outcome | None] = []
    began = time.monotonic()
    for notice in notices:
        if time.monotonic() - began > BATCH_S:
            break
        ok, status = webhooks.post(notice)
        outcomes.append(Outcome(ok, status))
        if not ok:
            break
    return outcomes + [None] * (len(notices) - len(outcomes))


# ---- digests -------------------------------------------------------------------------------------
def _mails_due(now: datetime) -> list[Notice]:
    """The mails to send now, each user's within the digest rule: all of theirs when they fit the
    window's room, else one digest of them all (none while the window is full)."""
    due = Notice.objects.filter(channel=MAIL, next_attempt_at__lte=now)
    foldable = due.exclude(event__in=(DIGEST, WEEKLY))
    waiting: dict[int, int] = dict(foldable.order_by().values_list("recipient_id").annotate(n=Count("id")))
    window = now - timedelta(minutes=settings.PAI_MAIL_DIGEST_MINUTES)
    recent = Notice.objects.filter(channel=MAIL, recipient_id__in=list(waiting), delivered_at__gt=window)
    sent: dict[int, int] = dict(recent.order_by().values_list("recipient_id").annotate(n=Count("id")))
    single, folded = [], []
    for recipient_id, count in waiting.items():
        room = settings.PAI_MAIL_DIGEST_AFTER - sent.get(recipient_id, 0)
        if count <= room:
            single.append(recipient_id)
        elif room > 0:
            folded.append(recipient_id)
    mails = list(due.filter(event__in=(DIGEST, WEEKLY))) + list(foldable.filter(recipient_id__in=single))
    for recipient_id in folded:
        mails.append(_digest(list(foldable.filter(recipient_id=recipient_id).order_by("id")), now))
    return sorted(mails, key=lambda notice: notice.pk)[:BATCH]


def _digest(notices: list[Notice], now: datetime) -> Notice:
    """One mail naming `notices` (one user's), which it replaces."""
    count, after = len(notices), settings.PAI_MAIL_DIGEST_AFTER
    lines = [
        f"- {n.created_at:%Y-%m-%d %H:%M:%S} UTC  {n.payload.get('line') or n.payload['subject']}" for n in notices
    ]
    if count > DIGEST_LINES:
        lines = [*lines[:DIGEST_LINES], f"... and {count - DIGEST_LINES} more"]
    body = (
        f"{count} notices about your jobs came in a short while: here they are in one email (you get at most "
        f"{after} emails in {settings.PAI_MAIL_DIGEST_MINUTES} minutes; what comes beyond, in a digest like this).\n\n"
        + "\n".join(lines)
        + "\n"
    )
    subject = f"[PAI] {count} notices about your jobs"
    with transaction.atomic():
        digest = Notice.objects.create(
            channel=MAIL,
            recipient_id=notices[0].recipient_id,
            event=DIGEST,
            payload={"to": notices[-1].payload["to"], "subject": subject, "body": body, "line": subject[6:]},
            next_attempt_at=now,
        )
        Notice.objects.filter(pk__in=[n.pk for n in notices], next_attempt_at__isnull=False).update(
            folded_into=digest, next_attempt_at=None, last_status=f"in digest #{digest.pk}"
        )
    return digest
