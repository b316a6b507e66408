"""The codes of a submit's checks beyond the protocol's, of the commands, webhooks, a job's timeline
and the portal's own ends of a job are in jobs/texts.json (catalogue)."""

from __future__ import annotations

# A run stopped by its sweep's early stopping (jobs.lifecycle, scheduling.stopping): each the `said`
# of `exit.exited` ("<phrase>: <said>").
PRUNED_CODES = ("exit.stop.pruned_median", "exit.stop.pruned_asha")
