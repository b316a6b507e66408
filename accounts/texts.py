"""Why a group change is refused (`group.*`): accounts.groups.GroupProblem's message, and
clusters.grants' (a VC or storage a group's removal would open to everyone)."""

from __future__ import annotations

from catalogue import Text

GROUP_NOT_FOUND = Text("group.not_found", "Group %(group)s is not found.")
NO_SUCH_NAMES = Text("group.no_such_names", "no such name(s): %(names)s")
NO_SUCH_GROUPS = Text("group.no_such_groups", "no such group(s): %(names)s")
BAD_NAME = Text("group.bad_name", "letters, digits and '_' only (at most 150)")
GROUP_EXISTS = Text("group.exists", "group %(group)s already exists")
OPENS_TO_EVERYONE = Text(
    "group.opens_to_everyone",
    "%(name)s names only the group %(group)s: without it, %(name)s would be open to everyone. "
    "Grant it to another group or user first.",
)
