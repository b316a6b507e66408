"""The job list's query: filters, sort and page from the query string, and the links that change them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, models
from django.db.models import Count, F, FloatField, OuterRef, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, Now

from accounts.permissions import is_admin
from jobs.actions import listed_jobs
from jobs.models import Job, JobState, Task
from jobs.protocol.priority import PRIORITY_CLASSES

# --- the job list's filters -------------------------------------------------------------------------

# Every column sorts (issue 36), on the server, in the URL (`?sort=gpus`, `?sort=-gpus`): the key's
# order, then the id so pages never share or skip a row. Submitted and name have an index that
# serves them; the others sort the filtered rows (a full scan of the filtered jobs).
SORT_COLUMNS: dict[str, tuple[str, ...]] = {
    "created": ("created_at",),
    "name": ("name",),
    "user": ("owner__username",),
    "state": ("state",),
    "vc": ("virtual_cluster__name",),
    "tasks": ("sort_tasks",),
    "gpus": ("gpu_count",),
    "duration": ("sort_duration",),
    "retries": ("retries_used",),
    "expected": ("expected_start_at",),  # (a waiting job's; null, last either way, for the others)
    "why": ("pending_reason",),
}
# The first click on a column: counts and times biggest first, names from A.
DESCENDING_FIRST = {"created", "tasks", "gpus", "duration", "retries"}
# Sorts an index serves with the page's LIMIT; the others first sort the ids alone (a narrow sort:
# at 100,000 jobs on SQLite 85 ms for GPUs instead of 512 ms sorting whole rows), then read the page.
INDEXED_SORTS = {"created", "name"}
SORTS = {key for column in SORT_COLUMNS for key in (column, f"-{column}")}


def sort_order(sort: str) -> list[Any]:
    """ORDER BY terms for a sort key (`gpus`, `-gpus`); a job never launched has no duration and
    sorts last either way."""
    column, descending = sort.lstrip("-"), sort.startswith("-")
    terms: list[Any] = []
    for name in SORT_COLUMNS[column]:
        expression = F(name)
        terms.append(expression.desc(nulls_last=True) if descending else expression.asc(nulls_last=True))
    terms.append("-id" if descending else "id")
    return terms


def with_sort_columns(jobs: Any, sort: str) -> Any:
    """The computed columns a sort needs (only those: the task count is a subquery per row)."""
    column = sort.lstrip("-")
    if column == "tasks":
        counted = Task.objects.filter(job=OuterRef("pk")).order_by().values("job").annotate(n=Count("id")).values("n")
        jobs = jobs.annotate(sort_tasks=Subquery(counted))
    elif column == "duration":
        if connection.vendor == "sqlite":
            # SQLite's own date functions: Django's datetime arithmetic there calls into Python
            # per row (1.3 s for 100,000 jobs; this takes a tenth of it).
            table = Job._meta.db_table
            days = f"julianday(COALESCE({table}.completed_at, 'now')) - julianday({table}.launched_at)"
            jobs = jobs.annotate(sort_duration=RawSQL(days, (), output_field=FloatField()))  # noqa: S611  (no input)
        else:
            jobs = jobs.annotate(sort_duration=Coalesce("completed_at", Now()) - F("launched_at"))
    return jobs


PAGE_SIZES = (20, 50, 100, 200)
# Columns the list never shows: left in the database so 100,000 rows stay cheap to page through.
# (The spec is read: the task and GPU columns come from it.)
LIST_DEFERRED = (
    "config_text",
    "secrets_encrypted",
    "ssh_public_key",
    "ssh_private_key_encrypted",
    "exit_diagnostics",
)


@dataclass
class ListPage:
    jobs: list[Any]
    number: int
    size: int
    total: int

    @property
    def num_pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.num_pages

    @property
    def previous_number(self) -> int:
        return self.number - 1

    @property
    def next_number(self) -> int:
        return self.number + 1

    @property
    def page_numbers(self) -> list[int | None]:
        """The pages to link: the first, the last and two either side of this one; None is a gap."""
        wanted = {1, self.num_pages, *range(self.number - 2, self.number + 3)}
        numbers: list[int | None] = []
        for number in sorted(n for n in wanted if 1 <= n <= self.num_pages):
            if numbers and number - (numbers[-1] or 0) > 1:
                numbers.append(None)
            numbers.append(number)
        return numbers

    @property
    def first_index(self) -> int:
        return (self.number - 1) * self.size + 1 if self.total else 0

    @property
    def last_index(self) -> int:
        return min(self.number * self.size, self.total)


@dataclass
class JobListQuery:
    """The list's filters from the query string. Two queries per page whatever its size: the
    per-state counts (which also give the total) and the page's rows with owner and VC joined."""

    user: Any
    state: str = ""
    vc: str = ""
    priority_class: str = ""  # one of HiveD's classes, "" for all
    search: str = ""
    owner: str = ""
    sort: str = "-created"
    page_number: int = 1
    page_size: int = 20
    state_counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_request(cls, request: Any) -> JobListQuery:
        params = request.GET
        state = params.get("state", "")
        sort = params.get("sort", "-created")
        try:
            page_number = max(1, int(params.get("page", 1)))
        except ValueError:
            page_number = 1
        try:
            page_size = int(params.get("size", 20))
        except ValueError:
            page_size = 20
        return cls(
            user=request.user,
            state=state if state in JobState.values else "",
            vc=params.get("vc", "").strip(),
            priority_class=params.get("priority", "") if params.get("priority", "") in PRIORITY_CLASSES else "",
            search=params.get("q", "").strip(),
            owner=params.get("user", "").strip(),
            sort=sort if sort in SORTS else "-created",
            page_number=page_number,
            page_size=page_size if page_size in PAGE_SIZES else 20,
        )

    @property
    def is_admin(self) -> bool:
        return is_admin(self.user)

    @property
    def shows_everyone(self) -> bool:
        """Admins, and everyone on a shared job list, see (and filter by) other users' jobs."""
        return self.is_admin or settings.PAI_SHARED_JOB_LIST

    def visible(self) -> Any:
        return listed_jobs(self.user)

    def filtered(self) -> Any:
        """Every filter except the state one (the counts are per state)."""
        jobs = self.visible()
        if self.owner and self.shows_everyone:
            # Users matching part of the name first (a small table), then their jobs by the owner index.
            owners = get_user_model().objects.filter(username__icontains=self.owner).values("pk")
            jobs = jobs.filter(owner_id__in=owners)
        if self.vc:
            jobs = jobs.filter(virtual_cluster__name=self.vc)
        if self.priority_class:
            jobs = jobs.filter(priority_class=self.priority_class)
        if self.search:
            jobs = jobs.filter(name__icontains=self.search)
        return jobs

    @property
    def has_filters(self) -> bool:
        """Whether the list is narrowed: an empty one then says so, not "no jobs yet"."""
        return bool(self.state or self.vc or self.priority_class or self.search or (self.owner and self.shows_everyone))

    def counts(self) -> dict[str, int]:
        rows = self.filtered().order_by().values_list("state").annotate(n=models.Count("id"))
        return {state: n for state, n in rows}

    def page(self) -> ListPage:
        counts = self.counts()
        self.state_counts = counts
        total = counts.get(self.state, 0) if self.state else sum(counts.values())
        jobs = self.filtered()
        if self.state:
            jobs = jobs.filter(state=self.state)
        last_page = max(1, -(-total // self.page_size))
        number = min(self.page_number, last_page)
        start = (number - 1) * self.page_size
        rows = self.page_rows(jobs, start)
        return ListPage(jobs=rows, number=number, size=self.page_size, total=total)

    def sorted(self, jobs: Any) -> Any:
        return with_sort_columns(jobs.defer(*LIST_DEFERRED), self.sort).order_by(*sort_order(self.sort))

    def page_rows(self, jobs: Any, start: int) -> list[Any]:
        if self.sort.lstrip("-") in INDEXED_SORTS:
            return list(self.sorted(jobs)[start : start + self.page_size])
        ordered = with_sort_columns(jobs.order_by(), self.sort).order_by(*sort_order(self.sort))
        ids = list(ordered.values_list("pk", flat=True)[start : start + self.page_size])
        found = {job.pk: job for job in jobs.defer(*LIST_DEFERRED).filter(pk__in=ids)}
        return [found[pk] for pk in ids if pk in found]

    def all_rows(self) -> Any:
        """Every job the list's filters and state select, in its order (the CSV export)."""
        jobs = self.filtered()
        if self.state:
            jobs = jobs.filter(state=self.state)
        return self.sorted(jobs.select_related("owner", "virtual_cluster"))

    def querystring(self, **changes: Any) -> str:
        """This list's query string with some parameters changed (for sort links and pages)."""
        params = {
            "state": self.state,
            "vc": self.vc,
            "priority": self.priority_class,
            "q": self.search,
            "user": self.owner,
            "sort": self.sort,
            "size": self.page_size if self.page_size != 20 else "",
        }
        params.update(changes)
        return urlencode({key: value for key, value in params.items() if value not in ("", None)})

    def sort_links(self) -> dict[str, str]:
        """Per sortable column: the query string that sorts by it, or reverses it when it is the sort."""
        links = {}
        for key in SORT_COLUMNS:
            if self.sort.lstrip("-") == key:
                target = key if self.sort.startswith("-") else f"-{key}"
            else:
                target = f"-{key}" if key in DESCENDING_FIRST else key
            links[key] = self.querystring(sort=target)
        return links

    def sort_states(self) -> dict[str, str]:
        """Per column: `ascending`/`descending` where the list is sorted by it (aria-sort)."""
        column = self.sort.lstrip("-")
        return {column: "descending" if self.sort.startswith("-") else "ascending"}

    def state_links(self) -> list[tuple[str, int, str, bool]]:
        """(state, count, query string, selected) for the counts bar; "" is all states."""
        total = sum(self.state_counts.values())
        links = [("", total, self.querystring(state=""), not self.state)]
        links += [
            (state, self.state_counts.get(state, 0), self.querystring(state=state), self.state == state)
            for state in JobState.values
        ]
        return links
