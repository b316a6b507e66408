"""What the portal's checks of a submit say beyond the protocol's (jobs.actions' SubmitChecks, the
dependencies a config names, sweeps, job templates, the commands): each a code and its English
template (catalogue.Text). The protocol's own codes are in jobs.protocol.texts."""

from __future__ import annotations

# --- exit diagnostics of the portal's own ends (jobs.lifecycle, scheduling.stopping) -----------
# Each the `said` of jobs.protocol.texts.EXITED ("<phrase>: <said>").

PRUNED_CODES = ("exit.stop.pruned_median", "exit.stop.pruned_asha")
