"""`python manage.py createvc NAME --share PERCENT [--users a,b]`: add or update a virtual cluster.
`createvc NAME --slurm-partition PART`: a VC whose jobs Slurm places, its quota the partition's."""

from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Sum

from clusters.models import PRIORITY_CLASS_CHOICES, VirtualCluster
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
        classes = [name for name, _ in PRIORITY_CLASS_CHOICES]
        parser.add_argument("--default-class", choices=classes, help="class of a job that names none (test)")
        parser.add_argument("--max-class", choices=classes, help="highest class a job may ask for (crit)")
        parser.add_argument("--crit-users", default=None, help="comma-separated users besides admins who may use crit")

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
        vc, created = VirtualCluster.objects.update_or_create(
            name=options["name"],
            defaults={"share_percent": share, "description": options["description"], "slurm_partition": partition},
        )
        for option, field in (("default_class", "default_priority_class"), ("max_class", "max_priority_class")):
            if options.get(option):
                setattr(vc, field, options[option])
                vc.save(update_fields=[field])
        if options["users"]:
            vc.allowed_users.set(self._users(options["users"], "--users"))
        if options.get("crit_users") is not None:
            vc.crit_users.set(self._users(options["crit_users"], "--crit-users"))
        what = f"Slurm partition {partition}" if partition else f"{share}%"
        self.stdout.write(f"{'created' if created else 'updated'} virtual cluster {vc.name} ({what})")

    def _users(self, names: str, option: str) -> list:
        users = [u.strip() for u in names.split(",") if u.strip()]
        found = list(get_user_model().objects.filter(username__in=users))
        missing = set(users) - {u.get_username() for u in found}
        if missing:
            raise CommandError(f"{option}: unknown user(s): {', '.join(sorted(missing))}")
        return found

    def _check_partition(self, partition: str) -> None:
        """The partition must exist and answer; its nodes are shown at once (the scheduler keeps them fresh)."""
        try:
            nodes = check_partition(partition)
        except PartitionError as exc:
            raise CommandError(f"--slurm-partition: {exc}") from exc
        gpus = sum(node.gpu_count for node in nodes if node.usable)
        self.stdout.write(f"partition {partition}: {len(nodes)} node(s), {gpus} GPU(s) Slurm can use")
