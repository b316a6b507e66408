"""`python manage.py createvc NAME --share PERCENT [--users a,b]`: add or update a virtual cluster.
`createvc NAME --slurm-partition PART`: a VC whose jobs Slurm places, its quota the partition's.
Sharing inside the VC (each left as it was when not given; `none` clears a number):
`--queue fifo|fair-share|best-effort`, `--backfill yes|no`, `--user-gpu-limit N`, `--default-run-minutes N`,
`--max-run-minutes N`;
priority classes: `--default-class C`, `--max-class C`, `--crit-users a,b`; borrowing:
`--lends yes|no` (other VCs' borrowing jobs may run on its idle quota; never a Slurm VC),
`--lending-limit PERCENT`, `--borrowing-limit PERCENT` (Kueue's lendingLimit/borrowingLimit, in % of
its quota; none: no limit).

A VC's rules are the VC pages', the admin's and the API's (clusters.vc_rules): a default time limit
within the longest and a Slurm VC that never lends are refused, naming the option. Shares over
100 % in all are warned of, not refused (docs/admin/nodes.md): the command line is where an
admin changes several VCs one command at a time."""

from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from catalogue import Message
from clusters import vc_rules
from clusters.models import PRIORITY_CLASS_CHOICES, VirtualCluster
from clusters.shares import over_100_warning, share_warnings, total_share
from clusters.slurm_nodes import PartitionError, check_partition

# Option -> what it sets (VirtualCluster fields of the same name with underscores).
SHARING_NUMBERS = {
    "user-gpu-limit": "most GPUs one user's jobs may hold in the VC at once",
    "default-run-minutes": "time limit in minutes of a job that names none (extras.maxRunTimeMinutes)",
    "max-run-minutes": "longest time limit in minutes a job may ask for",
}


# The fields the VC form's rules read besides the share (clusters.vc_rules).
RULE_FIELDS = ("default_run_minutes", "max_run_minutes", "lends_idle_quota", "slurm_partition")


# Option -> (field, most allowed): a percent of the VC's quota, applied to its GPUs, CPUs and memory.
LIMIT_PERCENTS = {"lending-limit": ("lending_limit_percent", 100), "borrowing-limit": ("borrowing_limit_percent", None)}


def limit_percent(flag: str, value: str, most: int | None) -> int | None:
    """A lending or borrowing limit: a whole percent from 0, or none."""
    if value.strip().lower() == "none":
        return None
    try:
        number = int(value.strip().rstrip("%"))
    except ValueError:
        raise CommandError(f"--{flag}: {value!r} is not a whole percent (or none)") from None
    if number < 0 or (most is not None and number > most):
        raise CommandError(f"--{flag}: must be a percent from 0{f' to {most}' if most else ''} (or none)")
    return number


def sharing_number(flag: str, value: str) -> int | None:
    """A sharing option's value: a positive whole number, or none."""
    if value.strip().lower() == "none":
        return None
    try:
        number = int(value)
    except ValueError:
        raise CommandError(f"--{flag}: {value!r} is not a whole number (or none)") from None
    if number < 1:
        raise CommandError(f"--{flag}: must be at least 1 (or none)")
    return number


class Command(BaseCommand):
    help = "Create (or update) a virtual cluster with a share of the cluster in percent."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--share", help="percent of the cluster, 0-100 (required unless --slurm-partition)")
        parser.add_argument(
            "--slurm-partition",
            default="",
            help="a Slurm partition: Slurm places the VC's jobs (quota, GPUs)",
        )
        parser.add_argument("--description", default="")
        parser.add_argument("--users", default="", help="comma-separated users allowed (empty: everyone)")
        classes = [name for name, _ in PRIORITY_CLASS_CHOICES]
        parser.add_argument("--default-class", choices=classes, help="class of a job that names none (test)")
        parser.add_argument("--max-class", choices=classes, help="highest class a job may ask for (crit)")
        parser.add_argument("--crit-users", default=None, help="comma-separated users besides admins who may use crit")
        parser.add_argument(
            "--queue",
            choices=[choice.value for choice in VirtualCluster.QueuePolicy],
            help="the order of the VC's waiting jobs: fifo (submit order), fair-share (least recent usage first) "
            "or best-effort (fifo, but a first job that does not fit holds nobody back)",
        )
        parser.add_argument(
            "--backfill",
            choices=["yes", "no"],
            help="later jobs may start ahead of the first waiting job when their time limits prove they do not "
            "delay it (yes by default)",
        )
        for flag, what in SHARING_NUMBERS.items():
            parser.add_argument(f"--{flag}", help=f"{what} (a whole number; none: no limit)")
        parser.add_argument(
            "--lends",
            choices=["yes", "no"],
            help="other VCs' borrowing jobs (PAI_BORROWING_CLASSES) may run on its idle quota until its own jobs "
            "need it back (never a Slurm VC)",
        )
        parser.add_argument(
            "--lending-limit",
            help="most of its quota, in %%, other VCs' jobs may borrow at once; it keeps the rest for its own jobs "
            "(none: all of it)",
        )
        parser.add_argument(
            "--borrowing-limit",
            help="most its jobs may borrow beyond its quota at once, in %% of its quota (none: no limit)",
        )

    def handle(self, *args, **options):
        partition = options["slurm_partition"]
        if partition:
            self._check_partition(partition)
            options["share"] = options["share"] or "0"  # the partition is its quota; no share of the portal's nodes
        existing = VirtualCluster.objects.filter(name=options["name"]).first()
        if options["share"] is None and existing is not None:  # (changing only its sharing options)
            options["share"] = str(existing.share_percent)
            options["description"] = options["description"] or existing.description
            partition = existing.slurm_partition
        if options["share"] is None:
            raise CommandError("--share: required (or --slurm-partition)")
        try:
            share = Decimal(options["share"])
        except InvalidOperation as exc:
            raise CommandError(f"--share: {options['share']!r} is not a number") from exc
        if not 0 <= share <= 100:
            raise CommandError("--share: must be between 0 and 100")
        defaults = {"share_percent": share, "description": options["description"], "slurm_partition": partition}
        defaults.update(self._sharing(options))
        if options.get("lends") is not None:
            defaults["lends_idle_quota"] = options["lends"] == "yes"
        self._check_rules(existing, defaults)
        if warning := over_100_warning(total_share(options["name"], 0 if partition else share)):
            self.stderr.write(f"warning: {warning} (`createvc default --share ...`)")
        for option, field in (("default_class", "default_priority_class"), ("max_class", "max_priority_class")):
            if options.get(option):
                defaults[field] = options[option]
        # Every check before any change: an unknown user leaves no VC behind (open to everyone).
        users = self._users(options["users"], "--users")
        crit_users = None if options.get("crit_users") is None else self._users(options["crit_users"], "--crit-users")
        with transaction.atomic():
            vc, created = VirtualCluster.objects.update_or_create(name=options["name"], defaults=defaults)
            if users is not None:
                vc.allowed_users.set(users)
            if crit_users is not None:
                vc.crit_users.set(crit_users)
        what = f"Slurm partition {partition}" if partition else f"{share}%"
        self.stdout.write(f"{'created' if created else 'updated'} virtual cluster {vc.name} ({what})")
        for warning in share_warnings().values():
            self.stderr.write(f"warning: {warning}")

    def _users(self, names: str, option: str) -> list[Any] | None:
        """The named users (None when no name is given), or an error naming the unknown ones."""
        wanted = [name.strip() for name in names.split(",") if name.strip()]
        if not wanted:
            return None if option == "--users" else []
        found = list(get_user_model().objects.filter(username__in=wanted))
        missing = set(wanted) - {user.get_username() for user in found}
        if missing:
            raise CommandError(
                f"{option}: unknown user(s): {', '.join(sorted(missing))}. Nothing was changed: add the users first "
                "(in /admin/, Users), then run createvc again."
            )
        return found

    def _sharing(self, options: dict) -> dict:
        """The sharing fields the options name (others stay as they are)."""
        fields: dict = {}
        if options["queue"]:
            fields["queue_policy"] = options["queue"]
        if options.get("backfill") is not None:
            fields["backfill"] = options["backfill"] == "yes"
        for flag in SHARING_NUMBERS:
            value = options[flag.replace("-", "_")]
            if value is not None:
                fields[flag.replace("-", "_")] = sharing_number(flag, value)
        for flag, (field, most) in LIMIT_PERCENTS.items():
            value = options[flag.replace("-", "_")]
            if value is not None:
                fields[field] = limit_percent(flag, value, most)
        return fields

    def _check_rules(self, existing: VirtualCluster | None, fields: dict) -> None:
        """The VC as it would be (its row with these fields) against the rules the VC form checks."""
        vc = existing or VirtualCluster()
        merged = {name: fields.get(name, getattr(vc, name)) for name in RULE_FIELDS}
        problems: dict[str, Message | None] = {
            "--default-run-minutes": vc_rules.time_limit_problem(
                merged["default_run_minutes"], merged["max_run_minutes"]
            ),
            "--lends": vc_rules.lending_problem(merged["lends_idle_quota"], merged["slurm_partition"]),
        }
        for option, problem in problems.items():
            if problem is not None:
                raise CommandError(f"{option}: {problem.text}")

    def _check_partition(self, partition: str) -> None:
        """The partition must exist and answer; its nodes are shown at once (the scheduler keeps them fresh)."""
        try:
            nodes = check_partition(partition)
        except PartitionError as exc:
            raise CommandError(f"--slurm-partition: {exc}") from exc
        gpus = sum(node.gpu_count for node in nodes if node.usable)
        self.stdout.write(f"partition {partition}: {len(nodes)} node(s), {gpus} GPU(s) Slurm can use")
