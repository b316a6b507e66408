"""Thin views over jobs.sweeps: each calls one action. Stop all and Resubmit failed ask first
(GET shows what will happen, POST does it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_GET, require_http_methods

from jobs import sweep_metrics, sweeps
from jobs.models import Sweep
from jobs.states import FINISHED_JOB_STATES
from jobs.sweep_search import search_state, spec_of
from web.templatetags.portal import RowUrls, seconds_span, state_label


def _sweep_or_404(request: HttpRequest, full_name: str) -> Sweep:
    try:
        return sweeps.find_sweep(request.user, full_name)
    except Sweep.DoesNotExist as error:
        raise Http404(_("No such sweep.")) from error


def sweep_list(request: HttpRequest) -> HttpResponse:
    rows = [
        sweeps.summary(sweep) | {"full_name": sweep.full_name} for sweep in sweeps.visible_sweeps(request.user)[:200]
    ]
    return render(request, "sweeps/list.html", {"sweeps": rows})


RUNS_PER_PAGE = 200  # (a thousand rows took the page past 300 ms: bench/sweeps.py)
FIXED_COLUMNS = {"index": "#", "name": gettext_lazy("Run")}
LAST_COLUMNS = {
    "state": gettext_lazy("State"),
    "durationSeconds": gettext_lazy("Duration"),
    "gpuHours": gettext_lazy("GPU-hours"),
}


def sweep_detail(request: HttpRequest, full_name: str) -> HttpResponse:
    """Every run with its values, state, duration and GPU-hours, and its last and best value of a
    training metric (`metric=loss&goal=min`); sorted by any column (`sort=lr`,
    `sort=-durationSeconds`) and filtered by state and values (`q=lr=0.01`), without JavaScript."""
    sweep = _sweep_or_404(request, full_name)
    rows = sweeps.run_rows(sweep)
    names = list(dict.fromkeys(name for row in rows for name in row["values"]))
    compared = _compared(request, sweep)
    metric_columns = _metric_columns(compared["metric"])
    compared["best_label"] = metric_columns.get("metricBest", "")
    by_run = sweep_metrics.run_metrics(sweep, compared["metric"], compared["goal"]) if compared["metric"] else {}
    # Each row's link and labels made here, once: a template tag per row and cell is most of a
    # 1,000-run page's time (bench/sweeps.py).
    detail = RowUrls().detail
    owner = sweep.owner.get_username()
    for row in rows:
        row["url"] = RowUrls.of(detail, f"{owner}~{row['name']}")
        row["cells"] = [row["values"].get(name, "") for name in names]
        row["state_label"] = state_label(row["state"])
        row["duration"] = seconds_span(row["durationSeconds"]) if row["durationSeconds"] else "—"
        measured = by_run.get(row["name"])
        row["metricLast"] = measured.last if measured else None
        row["metricBest"] = measured.best if measured else None
        row["metric_cells"] = [_number(row["metricLast"]), _number(row["metricBest"])]
    everything = rows
    state, text = request.GET.get("state", ""), request.GET.get("q", "").strip()
    if state:
        rows = [row for row in rows if row["state"] == state]
    if text:
        rows = [row for row in rows if all(_has(row, word) for word in text.split())]
    sort = request.GET.get("sort", "index")
    key = sort.removeprefix("-")
    if key in names:
        rows.sort(key=lambda row: _sortable(row["values"].get(key)), reverse=sort.startswith("-"))
    elif key in metric_columns:  # (runs without the metric last, either way)
        measured_rows = sorted((row for row in rows if row[key] is not None), key=lambda row: row[key])
        rows = (measured_rows[::-1] if sort.startswith("-") else measured_rows) + [r for r in rows if r[key] is None]
    elif key in {*FIXED_COLUMNS, *LAST_COLUMNS}:
        rows.sort(key=lambda row: _sortable(row[key]), reverse=sort.startswith("-"))
    labels = {**FIXED_COLUMNS, **{name: name for name in names}, **metric_columns, **LAST_COLUMNS}
    page = Paginator(rows, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    pages = request.GET.copy()
    pages.pop("page", None)
    return render(
        request,
        "sweeps/detail.html",
        {
            "sweep": sweep,
            "summary": sweeps.summary(sweep),
            "rows": page.object_list,
            "page": page,
            "pages_query": pages.urlencode(),
            "columns": [_column(request, column, label, sort) for column, label in labels.items()],
            "query": {"state": state, "q": text, "sort": sort},
            "states": sorted({row["state"] for row in everything}),
            "unfinished": sum(row["state"] not in FINISHED_JOB_STATES for row in everything),
            "failed": sum(row["state"] in ("FAILED", "STOPPED") for row in everything),
            "compared": compared,
            "best": _best(everything, by_run, compared["goal"], owner),
            **_search(sweep, owner),
        },
    )


def _search(sweep: Sweep, owner: str) -> dict[str, Any]:
    """An adaptive search's state: its trials by how they stand, its best run so far."""
    if sweep.kind != "search":
        return {}
    state = search_state(sweep)
    best = {}
    if state.best_run:
        best = {"url": reverse("jobs:detail", args=[f"{owner}~{state.best_run}"]), "value": _number(state.best_value)}
    return {"search": state, "search_best": best}


def _compared(request: HttpRequest, sweep: Sweep) -> dict[str, Any]:
    """The metric the page compares the runs by (the asked one, else the first any run reported),
    which way is better, how many runs' curves it overlays."""
    names = sweep_metrics.metric_names(sweep)
    searched = spec_of(sweep) if sweep.kind == "search" else None
    metric = request.GET.get("metric", "") or (searched.metric if searched else "")
    metric = metric if metric in names else (names[0] if names else "")
    goal = request.GET.get("goal", "")
    if goal not in sweep_metrics.GOALS:
        searched_goal = searched and metric == searched.metric and ("min" if searched.minimize else "max")
        goal = searched_goal or sweep_metrics.default_goal(metric)
    top = request.GET.get("top", "")
    top_n = min(int(top), sweep_metrics.TOP_MOST) if top.isdigit() and int(top) > 0 else sweep_metrics.TOP_DEFAULT
    return {"names": names, "metric": metric, "goal": goal, "top": top_n}


def _metric_columns(metric: str) -> dict[str, str]:
    if not metric:
        return {}
    return {
        "metricLast": _("%(metric)s, last") % {"metric": metric},
        "metricBest": _("%(metric)s, best") % {"metric": metric},
    }


def _best(rows: list[dict[str, Any]], by_run: dict[str, sweep_metrics.RunMetric], goal: str, owner: str) -> Any:
    """The run whose best value is best, with its values and the link that submits them again."""
    ranked = sweep_metrics.ranked(by_run, goal)
    if not ranked:
        return None
    row = next(row for row in rows if row["name"] == ranked[0])
    full_name = f"{owner}~{row['name']}"
    return {
        **row,
        "full_name": full_name,
        "clone_url": reverse("jobs:clone", args=[full_name]),
        "best_shown": _number(by_run[row["name"]].best),
        "last_shown": _number(by_run[row["name"]].last),
    }


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


@require_GET
def sweep_curves(request: HttpRequest, full_name: str) -> JsonResponse:
    """The compared metric's curves of the top runs, best first (the page's overlaid chart)."""
    sweep = _sweep_or_404(request, full_name)
    compared = _compared(request, sweep)
    if not compared["metric"]:
        return JsonResponse({"metric": "", "runs": []})
    by_run = sweep_metrics.run_metrics(sweep, compared["metric"], compared["goal"])
    top = sweep_metrics.ranked(by_run, compared["goal"])[: compared["top"]]
    return JsonResponse({"metric": compared["metric"], "runs": sweep_metrics.curves(sweep, compared["metric"], top)})


@require_GET
def sweep_points(request: HttpRequest, full_name: str) -> JsonResponse:
    """Each run's values and best and last value of the compared metric (the page's scatter and
    parallel coordinates); `runUrl` is a run's page with `__job__` for its full name (`runOwner~run`)."""
    sweep = _sweep_or_404(request, full_name)
    compared = _compared(request, sweep)
    if not compared["metric"]:
        return JsonResponse({"metric": "", "parameters": [], "runs": []})
    answer = sweep_metrics.points(sweep, compared["metric"], compared["goal"])
    owner = sweep.owner.get_username()
    return JsonResponse(
        {
            "metric": compared["metric"],
            "goal": compared["goal"],
            "runUrl": RowUrls().detail,
            "runOwner": owner,
            **answer,
        }
    )


def _has(row: dict[str, Any], word: str) -> bool:
    """`lr=0.01` matches that value; any other word, a run name or a value that contains it."""
    name, sep, value = word.partition("=")
    if sep:
        return str(row["values"].get(name, "")) == value
    return word in row["name"] or any(word in str(value) for value in row["values"].values())


def _sortable(value: Any) -> tuple[int, Any]:
    """Numbers before texts, each in their order (a sweep's values mix both)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, value)
    return (1, str(value))


def _column(request: HttpRequest, column: str, label: Any, sort: str) -> dict[str, Any]:
    query = request.GET.copy()
    query["sort"] = f"-{column}" if sort == column else column
    sorted_as = "ascending" if sort == column else "descending" if sort == f"-{column}" else ""
    return {"label": label, "querystring": query.urlencode(), "sorted": sorted_as}


@require_http_methods(["GET", "POST"])
def sweep_stop(request: HttpRequest, full_name: str) -> HttpResponse:
    return _after_asking(
        request,
        full_name,
        "stop",
        sweeps.stop_sweep,
        lambda count: ngettext("Stop requested for %(count)d run.", "Stop requested for %(count)d runs.", count),
    )


@require_http_methods(["GET", "POST"])
def sweep_resubmit(request: HttpRequest, full_name: str) -> HttpResponse:
    return _after_asking(
        request,
        full_name,
        "resubmit",
        lambda sweep, by: len(sweeps.resubmit_failed(sweep, by)),
        lambda count: ngettext("%(count)d run started again.", "%(count)d runs started again.", count),
    )


def _after_asking(
    request: HttpRequest,
    full_name: str,
    action: str,
    act: Callable[[Sweep, Any], int],
    said: Callable[[int], str],
) -> HttpResponse:
    """GET asks (sweeps/confirm.html says what `action` does); POST does it and says how many runs."""
    sweep = _sweep_or_404(request, full_name)
    if request.method == "GET":
        return render(request, "sweeps/confirm.html", {"sweep": sweep, "action": action})
    done = act(sweep, request.user)
    messages.success(request, said(done) % {"count": done})
    return redirect("sweeps:detail", sweep.full_name)
