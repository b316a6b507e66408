"""What the dashboard plots over time: each VC's usage and queue, recorded by the sampler."""

from django.db import models


class VcSample(models.Model):
    """One VC at one moment (every VC_SAMPLE_SECONDS): GPUs held and its quota, jobs queued and running."""

    vc = models.ForeignKey("clusters.VirtualCluster", on_delete=models.CASCADE, related_name="samples", db_index=False)
    at = models.BigIntegerField(help_text="Epoch seconds.")
    gpus_used = models.PositiveIntegerField()
    gpus_quota = models.PositiveIntegerField()
    jobs_waiting = models.PositiveIntegerField()
    jobs_running = models.PositiveIntegerField()
    # GPUs its running tasks hold, by GPU type: {"V100": 3}.
    gpus_by_type = models.JSONField(default=dict)

    class Meta:
        indexes = [
            models.Index(fields=["vc", "at"], name="vc_sample_vc_at"),
            models.Index(fields=["at"], name="vc_sample_at"),
        ]

    def __str__(self) -> str:
        return f"{self.vc_id} at {self.at}"
