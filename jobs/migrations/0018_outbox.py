"""The webhooks' outbox becomes the one outbox: mails join the POSTs (jobs.outbox); the rows kept."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0017_retention'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameModel(old_name='WebhookDelivery', new_name='Notice'),
        migrations.AlterField(
            model_name='notice',
            name='webhook',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='jobs.webhook'),
        ),
        migrations.AddField(
            model_name='notice',
            name='channel',
            field=models.CharField(choices=[('mail', 'Mail'), ('webhook', 'Webhook')], default='webhook', max_length=8),
        ),
        migrations.AddField(
            model_name='notice',
            name='recipient',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='notice',
            name='folded_into',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='folded', to='jobs.notice'),
        ),
        migrations.AddIndex(
            model_name='notice',
            index=models.Index(fields=['recipient', 'delivered_at'], name='notice_recipient_sent'),
        ),
        migrations.CreateModel(
            name='WebhookDelivery',
            fields=[],
            options={
                'ordering': ['-id'],
                'proxy': True,
                'indexes': [],
                'constraints': [],
            },
            bases=('jobs.notice',),
        ),
    ]
