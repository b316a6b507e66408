"""`python manage.py createvc NAME --share PERCENT [--users a,b]`: add or update a virtual cluster.
`createvc NAME --slurm-partition PART`: a VC whose jobs Slurm places, its quota the partition's."""

from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Sum

from clusters.models import VirtualCluster
from clusters.shares import share_warnings
from clusters.slurm_nodes import PartitionError, check_partition


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

    def handle(self, *args, **options):
        partition = options["slurm_partition"]
        if partition:
            self._check_partition(partition)
            options["share"] = options["share"] or "0"  # the partition is its quota; no share of the portal's nodes
        if options["share"] is None:
            raise CommandError("--share: required (or --slurm-partition)")
        try:
            share = Decimal(options["share"])
        except InvalidOperation as exc:
            raise CommandError(f"--share: {options['share']!r} is not a number") from exc
        if not 0 <= share <= 100:
            raise CommandError("--share: must be between 0 and 100")
        others = VirtualCluster.objects.exclude(name=options["name"]).aggregate(total=Sum("share_percent"))["total"]
        if (others or 0) + share > 100:
            self.stderr.write(
                f"warning: shares now add up to {(others or 0) + share}% (> 100%): lower another VC's share "
                "(e.g. `createvc default --share ...`)"
            )
        # Every check before any change: an unknown user leaves no VC behind (open to everyone).
        users = self._users(options["users"])
        with transaction.atomic():
            vc, created = VirtualCluster.objects.update_or_create(
                name=options["name"],
                defaults={"share_percent": share, "description": options["description"], "slurm_partition": partition},
            )
            if users is not None:
                vc.allowed_users.set(users)
        what = f"Slurm partition {partition}" if partition else f"{share}%"
        self.stdout.write(f"{'created' if created else 'updated'} virtual cluster {vc.name} ({what})")
        for warning in share_warnings().values():
            self.stderr.write(f"warning: {warning}")

    def _users(self, names: str) -> list[Any] | None:
        wanted = [name.strip() for name in names.split(",") if name.strip()]
        if not wanted:
            return None
        found = list(get_user_model().objects.filter(username__in=wanted))
        missing = set(wanted) - {user.get_username() for user in found}
        if missing:
            raise CommandError(
                f"--users: unknown user(s): {', '.join(sorted(missing))}. Nothing was changed: add the users first "
                "(in /admin/, Users), then run createvc again."
            )
        return found

    def _check_partition(self, partition: str) -> None:
        """The partition must exist and answer; its nodes are shown at once (the scheduler keeps them fresh)."""
        try:
            nodes = check_partition(partition)
        except PartitionError as exc:
            raise CommandError(f"--slurm-partition: {exc}") from exc
        gpus = sum(node.gpu_count for node in nodes if node.usable)
        self.stdout.write(f"partition {partition}: {len(nodes)} node(s), {gpus} GPU(s) Slurm can use")
